#ifndef GPULEDGER_VERSION_H
#define GPULEDGER_VERSION_H

/* The version the build gives (cmake/version.cmake defines
 * GPULEDGER_VERSION for the C side); "dev" for a compile without it. */
#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

#endif
