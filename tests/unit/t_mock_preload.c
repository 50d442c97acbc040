// SPDX-License-Identifier: MIT
/*
 * libgpsu-mock.so: the mock driver of t_mock.h as an LD_PRELOAD object,
 * to run the examples on a host without gps.ko:
 *
 *   LD_PRELOAD=build/lib/libgpsu-mock.so build/examples/mvmul
 *
 * The mock keeps one copy per allocation: it checks the library's and the
 * program's logic, not publication.
 */
#include "t_mock.h"

__attribute__((constructor)) static void mock_preload_init(void)
{
	mock_setup();
}
