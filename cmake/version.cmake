# Sets GPULEDGER_VERSION_STRING, the version the binary prints: the project's
# version, and in a git checkout the commit it was built from as build
# metadata unless HEAD is the release tag v<version>: "0.1.0",
# "0.1.0+g61bc52a", "0.1.0+3.g61bc52a.dirty". A commit or checkout configures
# again, so the version follows HEAD.
set(GPULEDGER_VERSION_STRING ${PROJECT_VERSION})
if(EXISTS ${CMAKE_SOURCE_DIR}/.git)
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} describe --tags --match "v[0-9]*" --always --dirty
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE described
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --path-format=absolute --git-path logs/HEAD
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE head_log
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT failed AND described)
      string(FIND "${described}" "v${PROJECT_VERSION}" at)
      if(at EQUAL 0)
        string(LENGTH "v${PROJECT_VERSION}" tag_length)
        string(SUBSTRING "${described}" ${tag_length} -1 metadata) # "", "-dirty", "-3-gabc-dirty"
      else()
        set(metadata "-g${described}") # no release tag: the commit
      endif()
      string(REPLACE "-" "." metadata "${metadata}")
      string(REGEX REPLACE "^\\." "+" metadata "${metadata}")
      string(APPEND GPULEDGER_VERSION_STRING "${metadata}")
    endif()
    if(EXISTS "${head_log}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${head_log}")
    endif()
  endif()
endif()
message(STATUS "gpuledger version ${GPULEDGER_VERSION_STRING}")
