/*
 * backprop - training of a two-layer perceptron (n inputs, 16 hidden units,
 * one output) by back-propagation with momentum, shaped like the Rodinia 3.1
 * benchmark: one kernel computes, per 16 inputs, their products with the
 * input-to-hidden weights and sums them in shared memory; the host adds the
 * block sums, runs the hidden and output layers, the errors and the
 * hidden-to-output update; a second kernel updates the input-to-hidden
 * weights. Rodinia trains one step; the optional second argument trains more
 * epochs on the same pattern, so the run lasts long enough to measure. The
 * hidden-to-output weights live on the host across epochs and are registered.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define HEIGHT 16 /* inputs per block */
#define HID 16	  /* hidden units */
#define OUT 1
#define ETA 0.3f
#define MOMENTUM 0.3f

static const char usage[] =
    "usage: backprop [<num of input elements> [epochs]] [--small]\n"
    "  num of input elements  a multiple of 16 (default 4194304; --small: 65536)\n"
    "  epochs                 training steps (default 800; --small: 20)\n"
    "  --verify               replay the training on the host and compare (small runs)\n";

static inline float squash(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

__host__ __device__ static inline float bp_weight(size_t idx, float scale)
{
	return scale * (2.0f * bench_unit_float(bench_hash2(21, idx)) - 1.0f);
}

__global__ void bp_init_weights(float *w, float *prev, size_t n, float scale)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; idx < n; idx += stride) {
		w[idx] = bp_weight(idx, scale);
		prev[idx] = 0.0f;
	}
}

/* Block b: inputs 16b+1 .. 16b+16 times their weights, summed over the 16 inputs. */
__global__ void bp_forward(const float *input, const float *w, float *partial)
{
	__shared__ float node[HEIGHT];
	__shared__ float m[HEIGHT][HID];
	int tx = threadIdx.x, ty = threadIdx.y, s;
	size_t row = (size_t)HEIGHT * blockIdx.x + ty + 1;

	if (tx == 0)
		node[ty] = input[row];
	__syncthreads();
	m[ty][tx] = w[row * (HID + 1) + tx + 1] * node[ty];
	__syncthreads();
	for (s = HEIGHT / 2; s > 0; s >>= 1) {
		if (ty < s)
			m[ty][tx] += m[ty + s][tx];
		__syncthreads();
	}
	if (ty == 0)
		partial[(size_t)blockIdx.x * HID + tx] = m[0][tx];
}

/* Input-to-hidden weights, with momentum; block 0's first row also moves the biases (row 0). */
__global__ void bp_adjust(const float *delta, const float *input, float *w, float *prev)
{
	int tx = threadIdx.x, ty = threadIdx.y, j = tx + 1;
	size_t k = (size_t)HEIGHT * blockIdx.x + ty + 1, idx = k * (HID + 1) + j;
	float dw = ETA * delta[j] * input[k] + MOMENTUM * prev[idx];

	w[idx] += dw;
	prev[idx] = dw;
	if (blockIdx.x == 0 && ty == 0) {
		float db = ETA * delta[j] + MOMENTUM * prev[j];

		w[j] += db;
		prev[j] = db;
	}
}

/* The layers that live on the host: [unit], unit 0 being the bias input (1). */
struct host_net {
	float hidden[HID + 1], output[OUT + 1], target[OUT + 1];
	float hw[(HID + 1) * (OUT + 1)], hprev[(HID + 1) * (OUT + 1)];
	float hid_delta[HID + 1];
	float out_err, hid_err;
};

/*
 * From the hidden units' input sums (in hidden[1..HID]): the hidden and output
 * layers, the errors, and the hidden-to-output update. Leaves the hidden
 * deltas the input-to-hidden update needs.
 */
static void bp_host_step(struct host_net *h)
{
	float out_delta[OUT + 1], e;
	int j, k;

	h->hidden[0] = 1.0f;
	for (j = 1; j <= HID; j++)
		h->hidden[j] = squash(h->hidden[j]);
	for (k = 1; k <= OUT; k++) {
		float s = 0.0f;

		for (j = 0; j <= HID; j++)
			s += h->hw[j * (OUT + 1) + k] * h->hidden[j];
		h->output[k] = squash(s);
	}
	h->out_err = 0.0f;
	for (k = 1; k <= OUT; k++) {
		out_delta[k] = h->output[k] * (1.0f - h->output[k]) * (h->target[k] - h->output[k]);
		h->out_err += fabsf(out_delta[k]);
	}
	h->hid_err = 0.0f;
	h->hid_delta[0] = 0.0f;
	for (j = 1; j <= HID; j++) {
		float s = 0.0f;

		for (k = 1; k <= OUT; k++)
			s += out_delta[k] * h->hw[j * (OUT + 1) + k];
		h->hid_delta[j] = h->hidden[j] * (1.0f - h->hidden[j]) * s;
		h->hid_err += fabsf(h->hid_delta[j]);
	}
	for (k = 1; k <= OUT; k++) {
		for (j = 0; j <= HID; j++) {
			e = ETA * out_delta[k] * h->hidden[j] +
			    MOMENTUM * h->hprev[j * (OUT + 1) + k];
			h->hw[j * (OUT + 1) + k] += e;
			h->hprev[j * (OUT + 1) + k] = e;
		}
	}
}

static void bp_host_init(struct host_net *h, float *input, long in)
{
	struct bench_rng rng;
	long j;

	memset(h, 0, sizeof(*h));
	h->target[1] = 0.1f;
	bench_rng_seed(&rng, 7);
	input[0] = 1.0f;
	for (j = 1; j <= in; j++)
		input[j] = bench_rng_float(&rng);
	for (j = 0; j < (HID + 1) * (OUT + 1); j++)
		h->hw[j] = 2.0f * bench_rng_float(&rng) - 1.0f;
}

/* The whole training on the host, sums in another order: compared with a tolerance. */
static void bp_verify(const float *w_d, const struct host_net *gpu, const float *input, long in,
		      long epochs)
{
	size_t nw = ((size_t)in + 1) * (HID + 1), i;
	float *w = (float *)malloc(nw * sizeof(float)), *prev = (float *)calloc(nw, sizeof(float));
	float *gw = (float *)malloc(nw * sizeof(float)), scale = 1.0f / sqrtf((float)in);
	float *again = (float *)malloc(((size_t)in + 1) * sizeof(float));
	double worst = 0.0, wmax = 0.0;
	struct host_net h;
	long ep, k, j;

	if (!w || !prev || !gw || !again)
		bench_die("--verify: out of host memory");
	/* The same draws as the run's setup: inputs, then the hidden weights. */
	bp_host_init(&h, again, in);
	free(again);
	for (i = 0; i < nw; i++)
		w[i] = bp_weight(i, scale);
	for (ep = 0; ep < epochs; ep++) {
		for (j = 1; j <= HID; j++) {
			float s = w[j];

			for (k = 1; k <= in; k++)
				s += w[k * (HID + 1) + j] * input[k];
			h.hidden[j] = s;
		}
		bp_host_step(&h);
		for (k = 0; k <= in; k++) {
			for (j = 1; j <= HID; j++) {
				size_t x = (size_t)k * (HID + 1) + j;
				float dw = ETA * h.hid_delta[j] * input[k] + MOMENTUM * prev[x];

				w[x] += dw;
				prev[x] = dw;
			}
		}
	}
	CK(cudaMemcpy(gw, w_d, nw * sizeof(float), cudaMemcpyDeviceToHost));
	for (i = 0; i < nw; i++) {
		worst = fabs((double)gw[i] - w[i]) > worst ? fabs((double)gw[i] - w[i]) : worst;
		wmax = fabs((double)w[i]) > wmax ? fabs((double)w[i]) : wmax;
	}
	bench_verified(worst <= 1e-3 * wmax && fabsf(h.output[1] - gpu->output[1]) < 1e-3f,
		       "largest weight difference %.3g (largest weight %.3g), output %.6f vs %.6f",
		       worst, wmax, gpu->output[1], h.output[1]);
	free(w);
	free(prev);
	free(gw);
}

int main(int argc, char **argv)
{
	int small = bench_start("backprop", &argc, argv, usage);
	long in = small ? 65536 : 4194304, epochs = small ? 20 : 800, j, b;
	struct {
		long epoch;
		float out_err, hid_err;
	} st = {0, 0.0f, 0.0f};
	struct host_net h;
	float *input, *partial, *input_d, *w_d, *prev_d, *partial_d, *delta_d, bias_w[HID + 1];
	struct bench_hasher hasher;
	size_t nw, blocks;
	uint64_t sum;

	if (argc > 3)
		bench_die("expected [<num of input elements> [epochs]] (see --help)");
	if (argc >= 2)
		in = bench_parse_long(argv[1], "num of input elements", HEIGHT, 1L << 28);
	if (argc == 3)
		epochs = bench_parse_long(argv[2], "epochs", 1, 100000000);
	if (in % HEIGHT)
		bench_die("num of input elements %ld: must be a multiple of %d", in, HEIGHT);
	bench_describe("inputs=%ld hidden=%d outputs=%d epochs=%ld", in, HID, OUT, epochs);
	blocks = (size_t)in / HEIGHT;
	nw = ((size_t)in + 1) * (HID + 1);

	input = (float *)malloc(((size_t)in + 1) * sizeof(float));
	partial = (float *)malloc(blocks * HID * sizeof(float));
	if (!input || !partial)
		bench_die("out of host memory for %ld inputs", in);
	bp_host_init(&h, input, in);

	CK(cudaMalloc((void **)&input_d, ((size_t)in + 1) * sizeof(float)));
	CK(cudaMalloc((void **)&w_d, nw * sizeof(float)));
	CK(cudaMalloc((void **)&prev_d, nw * sizeof(float)));
	CK(cudaMalloc((void **)&partial_d, blocks * HID * sizeof(float)));
	CK(cudaMalloc((void **)&delta_d, (HID + 1) * sizeof(float)));
	bench_hasher_init(&hasher);
	CK(cudaMemcpy(input_d, input, ((size_t)in + 1) * sizeof(float), cudaMemcpyHostToDevice));
	bp_init_weights<<<4096, 256>>>(w_d, prev_d, nw, 1.0f / sqrtf((float)in));
	CK_LAUNCH("bp_init_weights");

	bench_protect("state", &st, sizeof(st));
	bench_protect("hidden-weights", h.hw, sizeof(h.hw));
	bench_protect("hidden-prev-weights", h.hprev, sizeof(h.hprev));
	while (st.epoch < epochs) {
		dim3 grid((unsigned)blocks), block(HID, HEIGHT);

		if (bench_point(st.epoch) == GPUCKPT_RESTORED)
			continue;
		bp_forward<<<grid, block>>>(input_d, w_d, partial_d);
		CK_LAUNCH("bp_forward");
		CK(cudaMemcpy(partial, partial_d, blocks * HID * sizeof(float),
			      cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(bias_w, w_d, sizeof(bias_w), cudaMemcpyDeviceToHost));
		for (j = 1; j <= HID; j++)
			h.hidden[j] = bias_w[j];
		for (b = 0; b < (long)blocks; b++)
			for (j = 1; j <= HID; j++)
				h.hidden[j] += partial[b * HID + j - 1];
		bp_host_step(&h);
		st.out_err = h.out_err;
		st.hid_err = h.hid_err;
		CK(cudaMemcpy(delta_d, h.hid_delta, sizeof(h.hid_delta), cudaMemcpyHostToDevice));
		bp_adjust<<<grid, block>>>(delta_d, input_d, w_d, prev_d);
		CK_LAUNCH("bp_adjust");
		st.epoch++;
	}

	printf("backprop: output %.6f (target %.2f), output error %.3g, hidden error %.3g\n",
	       h.output[1], h.target[1], st.out_err, st.hid_err);
	if (bench_verifying())
		bp_verify(w_d, &h, input, in, epochs);
	sum = bench_fnv1a(h.hw, sizeof(h.hw), BENCH_FNV_INIT);
	sum = bench_fold(sum, (uint64_t)(st.out_err * 1e9f));
	sum = bench_hash_device(&hasher, w_d, nw * sizeof(float), sum);
	bench_finish(sum);
	bench_hasher_free(&hasher);
	CK(cudaFree(input_d));
	CK(cudaFree(w_d));
	CK(cudaFree(prev_d));
	CK(cudaFree(partial_d));
	CK(cudaFree(delta_d));
	free(input);
	free(partial);
	return 0;
}
