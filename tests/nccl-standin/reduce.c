/*
 * reduce.c - the element types and reduction operators of the collectives.
 * Integer sums and products wrap as a GPU's do: signed ones are computed in
 * the unsigned type of the same width, where C defines the overflow.
 * float16 and bfloat16 are not reduced here (ncclInvalidArgument).
 */
#include <stdint.h>

#include "nccl_standin.h"

size_t ns_type_size(ncclDataType_t type)
{
	switch (type) {
	case ncclInt8:
	case ncclUint8:
		return 1;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	}
	return 0;
}

bool ns_op_valid(ncclRedOp_t op)
{
	return op == ncclSum || op == ncclProd || op == ncclMax || op == ncclMin || op == ncclAvg;
}

/* T the element type, U the type its sum and product are computed in, D the
 * type ncclAvg divides in (wide enough for any number of ranks). */
#define NS_REDUCER(name, T, U, D)                                                                  \
	static void reduce_##name(T *acc, const T *in, size_t n, ncclRedOp_t op)                   \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			switch (op) {                                                              \
			case ncclSum:                                                              \
			case ncclAvg:                                                              \
				acc[i] = (T)((U)acc[i] + (U)in[i]);                                \
				break;                                                             \
			case ncclProd:                                                             \
				acc[i] = (T)((U)acc[i] * (U)in[i]);                                \
				break;                                                             \
			case ncclMax:                                                              \
				acc[i] = in[i] > acc[i] ? in[i] : acc[i];                          \
				break;                                                             \
			case ncclMin:                                                              \
				acc[i] = in[i] < acc[i] ? in[i] : acc[i];                          \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
	}                                                                                          \
	static void avg_##name(T *acc, size_t n, int nranks)                                       \
	{                                                                                          \
		for (size_t i = 0; i < n; i++)                                                     \
			acc[i] = (T)((D)acc[i] / (D)nranks);                                       \
	}

/* uint8_t arithmetic promotes to int: unsigned int keeps it wrapping. */
NS_REDUCER(i8, int8_t, unsigned int, int64_t)
NS_REDUCER(u8, uint8_t, unsigned int, uint64_t)
NS_REDUCER(i32, int32_t, uint32_t, int64_t)
NS_REDUCER(u32, uint32_t, uint32_t, uint64_t)
NS_REDUCER(i64, int64_t, uint64_t, int64_t)
NS_REDUCER(u64, uint64_t, uint64_t, uint64_t)
NS_REDUCER(f32, float, float, float)
NS_REDUCER(f64, double, double, double)

void ns_reduce(void *acc, const void *in, size_t n, ncclDataType_t type, ncclRedOp_t op)
{
	switch (type) {
	case ncclInt8:
		reduce_i8(acc, in, n, op);
		break;
	case ncclUint8:
		reduce_u8(acc, in, n, op);
		break;
	case ncclInt32:
		reduce_i32(acc, in, n, op);
		break;
	case ncclUint32:
		reduce_u32(acc, in, n, op);
		break;
	case ncclInt64:
		reduce_i64(acc, in, n, op);
		break;
	case ncclUint64:
		reduce_u64(acc, in, n, op);
		break;
	case ncclFloat32:
		reduce_f32(acc, in, n, op);
		break;
	case ncclFloat64:
		reduce_f64(acc, in, n, op);
		break;
	}
}

void ns_reduce_avg(void *acc, size_t n, ncclDataType_t type, int nranks)
{
	switch (type) {
	case ncclInt8:
		avg_i8(acc, n, nranks);
		break;
	case ncclUint8:
		avg_u8(acc, n, nranks);
		break;
	case ncclInt32:
		avg_i32(acc, n, nranks);
		break;
	case ncclUint32:
		avg_u32(acc, n, nranks);
		break;
	case ncclInt64:
		avg_i64(acc, n, nranks);
		break;
	case ncclUint64:
		avg_u64(acc, n, nranks);
		break;
	case ncclFloat32:
		avg_f32(acc, n, nranks);
		break;
	case ncclFloat64:
		avg_f64(acc, n, nranks);
		break;
	}
}
