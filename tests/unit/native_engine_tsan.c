// SPDX-License-Identifier: MIT
/*
 * Description: tests/unit/native_engine again, with the library and the
 * pure core built with ThreadSanitizer instead of ASan (the two do not
 * mix): a data race between the engine's threads (harvests, pushes,
 * copies and the program's threads through the library) fails the run.
 * Stores through a device's view and the engine's writes through its
 * own mapping of the same memory are at different addresses: TSan does
 * not see those, the other tests do.
 */
#include "native_engine.c"
