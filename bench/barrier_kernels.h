/* SPDX-License-Identifier: MIT */
/*
 * barrier_kernels.h - CUDA kernels with block barriers, each written
 * twice: as GPS_KERNEL_SYNC (fibers, the form that always works) and as
 * GPS_KERNEL_PHASES (loops over the block's threads between barriers),
 * for the tests that the two compute exactly the same
 * (tests/unit/mock_phases.c) and for bench/barrier.c, which times them
 * against plain loops. Written as the CUDA kernels are (GPSU_CUDA_NAMES),
 * not copied from NVIDIA's samples.
 *
 * reduce0:  a barrier per level, interleaved pairs (tid % (2 * s)), the
 *           shape of CUDA's first reduction sample; any block size.
 *           reduce0_mask: the same test as a mask (phases only).
 * reduce_seq: a barrier per level, sequential pairs (tid < s).
 * reduce_reg: a grid-stride sum per thread (GPS_GRID_STRIDE_LOOP, the
 *           porting guide's rule for CUDA's grid-stride loop) kept in a
 *           register across barriers, a tree in shared memory down to 32,
 *           then the warp's steps (shuffles in the fiber form, a
 *           per-thread array in the phase form). Blocks of a power of
 *           two (32 or more) threads.
 * matmul:   C = A * B in TILE x TILE tiles through shared memory, blocks of
 *           TILE x TILE threads (TILE <= 32), any sizes.
 * hist:     256 bins per block in shared memory with atomics, added to
 *           the global bins with atomics at the end; the grid-stride loop
 *           as GPS_GRID_STRIDE_LOOP (the porting guide's rule).
 */
#ifndef BARRIER_KERNELS_H
#define BARRIER_KERNELS_H

#include "gpsu.h"

#define TP_MAX_BLOCK	1024
#define TP_BINS		256
#define TP_TILE_MAX	32

struct tp_reduce {
	const int *in;
	long long *out;		/* one sum per block */
	unsigned int n;
};

struct tp_matmul {
	const int *A, *B;	/* M x K, K x N, row-major */
	int *C;			/* M x N */
	unsigned int M, N, K, tile;
};

struct tp_hist {
	const unsigned char *in;
	unsigned int *bins;	/* TP_BINS */
	unsigned int n;
};

/* ---- reduce0 -------------------------------------------------------- */

GPS_KERNEL_SYNC(tp_reduce0_fib, struct tp_reduce, a)
{
	long long *sdata = gpsSharedMem();
	unsigned int tid = threadIdx.x, s;
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	sdata[tid] = i < a->n ? a->in[i] : 0;
	__syncthreads();
	for (s = 1; s < blockDim.x; s *= 2) {
		if (tid % (2 * s) == 0 && tid + s < blockDim.x)
			sdata[tid] += sdata[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		a->out[blockIdx.x] = sdata[0];
}

GPS_KERNEL_PHASES(tp_reduce0_ph, struct tp_reduce, a)
{
	long long sdata[TP_MAX_BLOCK];	/* __shared__ */
	unsigned int s;

	GPS_FOR_EACH_THREAD {
		unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

		sdata[threadIdx.x] = i < a->n ? a->in[i] : 0;
	}
	__syncthreads();
	for (s = 1; s < blockDim.x; s *= 2) {
		GPS_FOR_EACH_THREAD {
			unsigned int tid = threadIdx.x;

			if (tid % (2 * s) == 0 && tid + s < blockDim.x)
				sdata[tid] += sdata[tid + s];
		}
		__syncthreads();
	}
	a->out[blockIdx.x] = sdata[0];
}

/* reduce0 with its test as a mask: 2 * s is a power of two, so
 * tid % (2 * s) == 0 is (tid & (2 * s - 1)) == 0, without a division */
GPS_KERNEL_PHASES(tp_reduce0_mask_ph, struct tp_reduce, a)
{
	long long sdata[TP_MAX_BLOCK];
	unsigned int s;

	GPS_FOR_EACH_THREAD {
		unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

		sdata[threadIdx.x] = i < a->n ? a->in[i] : 0;
	}
	__syncthreads();
	for (s = 1; s < blockDim.x; s *= 2) {
		GPS_FOR_EACH_THREAD {
			unsigned int tid = threadIdx.x;

			if ((tid & (2 * s - 1)) == 0 && tid + s < blockDim.x)
				sdata[tid] += sdata[tid + s];
		}
		__syncthreads();
	}
	a->out[blockIdx.x] = sdata[0];
}

/* ---- reduce_seq ------------------------------------------------------ */

/* the smallest power of two >= n, halved: the first stride */
static inline unsigned int tp_half_pow2(unsigned int n)
{
	unsigned int p = 1;

	while (p < n)
		p *= 2;
	return p / 2;
}

GPS_KERNEL_SYNC(tp_reduce_seq_fib, struct tp_reduce, a)
{
	long long *sdata = gpsSharedMem();
	unsigned int tid = threadIdx.x, s;
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	sdata[tid] = i < a->n ? a->in[i] : 0;
	__syncthreads();
	for (s = tp_half_pow2(blockDim.x); s > 0; s >>= 1) {
		if (tid < s && tid + s < blockDim.x)
			sdata[tid] += sdata[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		a->out[blockIdx.x] = sdata[0];
}

GPS_KERNEL_PHASES(tp_reduce_seq_ph, struct tp_reduce, a)
{
	long long *sdata = gpsSharedMem();	/* extern __shared__ */
	unsigned int s;

	GPS_FOR_EACH_THREAD {
		unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

		sdata[threadIdx.x] = i < a->n ? a->in[i] : 0;
	}
	__syncthreads();
	for (s = tp_half_pow2(blockDim.x); s > 0; s >>= 1) {
		GPS_FOR_EACH_THREAD
			if (threadIdx.x < s && threadIdx.x + s < blockDim.x)
				sdata[threadIdx.x] += sdata[threadIdx.x + s];
		__syncthreads();
	}
	a->out[blockIdx.x] = sdata[0];
}

/* ---- reduce_reg ------------------------------------------------------ */

GPS_KERNEL_SYNC(tp_reduce_reg_fib, struct tp_reduce, a)
{
	long long *sdata = gpsSharedMem();
	unsigned int tid = threadIdx.x, s, i;
	long long sum = 0;

	GPS_GRID_STRIDE_LOOP(i, a->n)
		sum += a->in[i];
	sdata[tid] = sum;
	__syncthreads();
	for (s = blockDim.x / 2; s >= 32; s >>= 1) {
		if (tid < s)
			sdata[tid] = sum = sum + sdata[tid + s];
		__syncthreads();
	}
	if (tid < 32) {
		if (blockDim.x >= 64)
			sum = sdata[tid];
		for (s = 16; s > 0; s >>= 1)
			sum += __shfl_down_sync(0xffffffffu, sum, s);
	}
	if (tid == 0)
		a->out[blockIdx.x] = sum;
}

GPS_KERNEL_PHASES(tp_reduce_reg_ph, struct tp_reduce, a)
{
	long long *sdata = gpsSharedMem();
	GPS_PER_THREAD(long long, sum);		/* a register */
	unsigned int s;

	GPS_FOR_EACH_THREAD {
		unsigned int i;
		long long my = 0;

		GPS_GRID_STRIDE_LOOP(i, a->n)
			my += a->in[i];
		sdata[threadIdx.x] = sum[GPS_TID] = my;
	}
	__syncthreads();
	for (s = blockDim.x / 2; s >= 32; s >>= 1) {
		GPS_FOR_EACH_THREAD
			if (threadIdx.x < s)
				sdata[threadIdx.x] = sum[GPS_TID] =
					sum[GPS_TID] + sdata[threadIdx.x + s];
		__syncthreads();
	}
	GPS_FOR_EACH_THREAD
		if (threadIdx.x < 32 && blockDim.x >= 64)
			sum[GPS_TID] = sdata[threadIdx.x];
	/* a shuffle down by s: lanes read the values of lanes s above them
	 * before any is changed; ascending order reads them unchanged */
	for (s = 16; s > 0; s >>= 1)
		GPS_FOR_EACH_THREAD
			if (threadIdx.x < 32 && threadIdx.x + s < 32)
				sum[GPS_TID] += sum[GPS_TID + s];
	a->out[blockIdx.x] = sum[0];
}

/* ---- matmul ---------------------------------------------------------- */

/* the tiles of A and B: tile * tile ints each, in dynamic shared memory */
GPS_KERNEL_SYNC(tp_matmul_fib, struct tp_matmul, a)
{
	unsigned int t = a->tile, tx = threadIdx.x, ty = threadIdx.y;
	int *As = gpsSharedMem(), *Bs = As + t * t;
	unsigned int row = blockIdx.y * t + ty, col = blockIdx.x * t + tx;
	unsigned int k0, k;
	int acc = 0;

	for (k0 = 0; k0 < a->K; k0 += t) {
		As[ty * t + tx] = row < a->M && k0 + tx < a->K ?
				  a->A[row * a->K + k0 + tx] : 0;
		Bs[ty * t + tx] = col < a->N && k0 + ty < a->K ?
				  a->B[(k0 + ty) * a->N + col] : 0;
		__syncthreads();
		for (k = 0; k < t; k++)
			acc += As[ty * t + k] * Bs[k * t + tx];
		__syncthreads();
	}
	if (row < a->M && col < a->N)
		a->C[row * a->N + col] = acc;
}

GPS_KERNEL_PHASES(tp_matmul_ph, struct tp_matmul, a)
{
	unsigned int t = a->tile, k0;
	int *As = gpsSharedMem(), *Bs = As + t * t;
	GPS_PER_THREAD(int, acc);

	GPS_FOR_EACH_THREAD
		acc[GPS_TID] = 0;
	for (k0 = 0; k0 < a->K; k0 += t) {
		GPS_FOR_EACH_THREAD {
			unsigned int tx = threadIdx.x, ty = threadIdx.y;
			unsigned int row = blockIdx.y * t + ty;
			unsigned int col = blockIdx.x * t + tx;

			As[ty * t + tx] = row < a->M && k0 + tx < a->K ?
					  a->A[row * a->K + k0 + tx] : 0;
			Bs[ty * t + tx] = col < a->N && k0 + ty < a->K ?
					  a->B[(k0 + ty) * a->N + col] : 0;
		}
		__syncthreads();
		GPS_FOR_EACH_THREAD {
			unsigned int tx = threadIdx.x, ty = threadIdx.y, k;
			int sum = acc[GPS_TID];

			for (k = 0; k < t; k++)
				sum += As[ty * t + k] * Bs[k * t + tx];
			acc[GPS_TID] = sum;
		}
		__syncthreads();
	}
	GPS_FOR_EACH_THREAD {
		unsigned int row = blockIdx.y * t + threadIdx.y;
		unsigned int col = blockIdx.x * t + threadIdx.x;

		if (row < a->M && col < a->N)
			a->C[row * a->N + col] = acc[GPS_TID];
	}
}

/* ---- hist ------------------------------------------------------------ */

GPS_KERNEL_SYNC(tp_hist_fib, struct tp_hist, a)
{
	unsigned int *sbins = gpsSharedMem();
	unsigned int tid = threadIdx.x, i;

	for (i = tid; i < TP_BINS; i += blockDim.x)
		sbins[i] = 0;
	__syncthreads();
	GPS_GRID_STRIDE_LOOP(i, a->n)
		atomicAdd(&sbins[a->in[i]], 1u);
	__syncthreads();
	for (i = tid; i < TP_BINS; i += blockDim.x)
		if (sbins[i])
			atomicAdd(&a->bins[i], sbins[i]);
}

GPS_KERNEL_PHASES(tp_hist_ph, struct tp_hist, a)
{
	unsigned int sbins[TP_BINS];	/* __shared__ */

	GPS_FOR_EACH_THREAD {
		unsigned int i;

		for (i = threadIdx.x; i < TP_BINS; i += blockDim.x)
			sbins[i] = 0;
	}
	__syncthreads();
	GPS_FOR_EACH_THREAD {
		unsigned int i;

		/* the block's threads take turns: a plain add is atomic */
		GPS_GRID_STRIDE_LOOP(i, a->n)
			sbins[a->in[i]]++;
	}
	__syncthreads();
	GPS_FOR_EACH_THREAD {
		unsigned int i;

		for (i = threadIdx.x; i < TP_BINS; i += blockDim.x)
			if (sbins[i])
				atomicAdd(&a->bins[i], sbins[i]);
	}
}

#endif /* BARRIER_KERNELS_H */
