# What `cmake --install` puts where, and the Debian package made of it
# (`cpack -G DEB` in the build directory): the binary in /usr/bin, its man
# page, the systemd unit (installed, not enabled) with its options file in
# /etc/default, the site directories /etc/gpuledger/rules.d and scripts, and
# the README, licence, changelog and example rules under /usr/share/doc.

# gpuledger(1) from the help text.
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/gpuledger.1 ${CMAKE_BINARY_DIR}/gpuledger.1.gz
  COMMAND sh -c "$<TARGET_FILE:gpuledger> help | awk -v version=${GPULEDGER_VERSION_STRING} -f ${CMAKE_SOURCE_DIR}/cmake/manpage.awk >gpuledger.1"
  COMMAND gzip -9nkf gpuledger.1
  DEPENDS gpuledger ${CMAKE_SOURCE_DIR}/cmake/manpage.awk
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Writing the man page gpuledger.1"
  VERBATIM)
add_custom_target(manpage ALL DEPENDS ${CMAKE_BINARY_DIR}/gpuledger.1)

set(DOC_DIR share/doc/gpuledger)
install(TARGETS gpuledger RUNTIME DESTINATION bin)
install(FILES ${CMAKE_BINARY_DIR}/gpuledger.1.gz DESTINATION share/man/man1)
install(FILES deploy/systemd/gpuledger.service DESTINATION lib/systemd/system)
# Readable by root only: it may hold NOMAD_TOKEN (systemd reads it as root).
install(FILES deploy/systemd/gpuledger.default DESTINATION /etc/default RENAME gpuledger
        PERMISSIONS OWNER_READ OWNER_WRITE)
install(DIRECTORY DESTINATION /etc/gpuledger/rules.d)
install(DIRECTORY DESTINATION /etc/gpuledger/scripts)
install(FILES README.md CHANGELOG.md DESTINATION ${DOC_DIR})
install(FILES LICENSE DESTINATION ${DOC_DIR} RENAME copyright)
install(DIRECTORY rules/examples/ DESTINATION ${DOC_DIR}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuledger)
set(CPACK_PACKAGE_VERSION ${GPULEDGER_VERSION_STRING})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "gpuledger maintainers <gpuledger@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "who is on each NVIDIA GPU of a Nomad node, and should they be")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# Lua and lua-cjson are linked in; libcurl and libmicrohttpd are not. adduser
# makes the service's user, init-system-helpers' deb-systemd-helper and
# deb-systemd-invoke handle its unit; nvidia-smi comes with the NVIDIA driver.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libcurl4 (>= 7.88), libmicrohttpd12 (>= 0.9.75), adduser, init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "nvidia-smi")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_SOURCE_DIR}/deploy/debian/prerm ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
