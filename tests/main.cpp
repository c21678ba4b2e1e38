// The Catch2 main: kept alone in one file so that the heavy header compiles once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
