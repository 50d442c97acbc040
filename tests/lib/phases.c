// SPDX-License-Identifier: MIT
/*
 * Description: the barrier kernels of bench/barrier_kernels.h on every
 * device, their data in GPS memory: the GPS_KERNEL_PHASES forms (thread
 * loops) and the GPS_KERNEL_SYNC forms (fibers) of the barrier-per-level
 * reduction, the tiled matrix product and the shared-memory histogram
 * each give the CPU's exact result, read back on the host after the
 * kernel's release. tests/unit/mock_phases.c covers more sizes on the mock.
 */
#define GPSU_CUDA_NAMES
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "t_lib.h"
#include "../../bench/barrier_kernels.h"

#define PH_N	20011u		/* odd: a partial last block */
#define PH_M	29u		/* matrices PH_M x PH_M */

static unsigned int ph_rand(unsigned int *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static gpsError_t ph_run(const gpsKernel *k, gpsDim3 g, gpsDim3 b,
			 const gpsKernelArgs *args, size_t shared)
{
	gpsError_t err = gpsLaunch(k, g, b, args, shared, NULL);

	return err ? err : gpsDeviceSynchronize();
}

TEST(every_device_phases_and_fibers)
{
	const gpsKernel *red[] = { &tp_reduce_seq_ph, &tp_reduce_seq_fib,
				   &tp_reduce0_ph, &tp_reduce0_fib };
	const gpsKernel *mm[] = { &tp_matmul_ph, &tp_matmul_fib };
	const gpsKernel *hi[] = { &tp_hist_ph, &tp_hist_fib };
	unsigned int i, j, k, x = 5, nb = (PH_N + 63) / 64;
	unsigned int want_bins[TP_BINS];
	int *in, *A, *B, *C, *want_c, ndev, d;
	unsigned int *bins;
	unsigned char *bytes;
	long long *out, want = 0;

	T_DEVICES(ndev);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&in, PH_N * sizeof(int),
					   gpsMemGPSAutomatic));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&out,
					   nb * sizeof(long long),
					   gpsMemGPSAutomatic));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&A, 3 * PH_M * PH_M *
					   sizeof(int), gpsMemGPSAutomatic));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&bytes, PH_N,
					   gpsMemGPSAutomatic));
	ASSERT_EQ(gpsSuccess, gpsMallocGPS((void **)&bins,
					   TP_BINS * sizeof(int),
					   gpsMemGPSAutomatic));
	B = A + PH_M * PH_M;
	C = B + PH_M * PH_M;
	want_c = calloc(PH_M * PH_M, sizeof(int));
	ASSERT_NE(NULL, want_c);
	memset(want_bins, 0, sizeof(want_bins));
	for (i = 0; i < PH_N; i++) {
		in[i] = (int)(ph_rand(&x) % 2001) - 1000;
		want += in[i];
		bytes[i] = (unsigned char)(ph_rand(&x) % 256 & ph_rand(&x));
		want_bins[bytes[i]]++;
	}
	for (i = 0; i < 2 * PH_M * PH_M; i++)
		A[i] = (int)(ph_rand(&x) % 201) - 100;
	for (i = 0; i < PH_M; i++)
		for (j = 0; j < PH_M; j++)
			for (k = 0; k < PH_M; k++)
				want_c[i * PH_M + j] += A[i * PH_M + k] *
							B[k * PH_M + j];
	for (d = 0; d < ndev; d++) {
		struct tp_reduce r = { in, out, PH_N };
		struct tp_matmul m = { A, B, C, PH_M, PH_M, PH_M, 8 };
		struct tp_hist h = { bytes, bins, PH_N };

		ASSERT_EQ(gpsSuccess, gpsSetDevice(d));
		for (k = 0; k < 4; k++) {
			long long got = 0;

			memset(out, 0, nb * sizeof(long long));
			ASSERT_EQ(gpsSuccess,
				  ph_run(red[k], gpsDim(nb, 1, 1),
					 gpsDim(64, 1, 1),
					 GPS_ARGS(&r, GPS_PTR(struct tp_reduce,
							      in),
						  GPS_PTR(struct tp_reduce,
							  out)),
					 64 * sizeof(long long)));
			for (i = 0; i < nb; i++)
				got += out[i];
			ASSERT_EQ(want, got) TH_LOG("device %d, %s", d,
						    red[k]->name);
		}
		for (k = 0; k < 2; k++) {
			memset(C, 0, PH_M * PH_M * sizeof(int));
			ASSERT_EQ(gpsSuccess,
				  ph_run(mm[k], gpsDim(4, 4, 1),
					 gpsDim(8, 8, 1),
					 GPS_ARGS(&m, GPS_PTR(struct tp_matmul,
							      A),
						  GPS_PTR(struct tp_matmul, B),
						  GPS_PTR(struct tp_matmul,
							  C)),
					 2 * 8 * 8 * sizeof(int)));
			ASSERT_EQ(0, memcmp(want_c, C,
					    PH_M * PH_M * sizeof(int)))
				TH_LOG("device %d, %s", d, mm[k]->name);
		}
		for (k = 0; k < 2; k++) {
			memset(bins, 0, TP_BINS * sizeof(int));
			ASSERT_EQ(gpsSuccess,
				  ph_run(hi[k], gpsDim(6, 1, 1),
					 gpsDim(96, 1, 1),
					 GPS_ARGS(&h, GPS_PTR(struct tp_hist,
							      in),
						  GPS_PTR(struct tp_hist,
							  bins)),
					 TP_BINS * sizeof(int)));
			ASSERT_EQ(0, memcmp(want_bins, bins, sizeof(want_bins)))
				TH_LOG("device %d, %s", d, hi[k]->name);
		}
	}
	free(want_c);
	ASSERT_EQ(gpsSuccess, gpsSetDevice(0));
	EXPECT_EQ(gpsSuccess, gpsFree(in));
	EXPECT_EQ(gpsSuccess, gpsFree(out));
	EXPECT_EQ(gpsSuccess, gpsFree(A));
	EXPECT_EQ(gpsSuccess, gpsFree(bytes));
	EXPECT_EQ(gpsSuccess, gpsFree(bins));
}

TEST_HARNESS_MAIN
