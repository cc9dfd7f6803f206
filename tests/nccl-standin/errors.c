/*
 * errors.c - the library's version, result texts and last error.
 */
#include "nccl_standin.h"

ncclResult_t ncclGetVersion(int *version)
{
	if (!version) {
		ns_set_error("ncclGetVersion: version is NULL");
		NS_RET(ncclInvalidArgument, "NULL");
	}
	*version = NS_VERSION;
	NS_RET(ncclSuccess, "-> %d", *version);
}

const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess:
		return "no error";
	case ncclUnhandledCudaError:
		return "unhandled cuda error (the CUDA driver refused a call)";
	case ncclSystemError:
		return "unhandled system error (a socket or descriptor failed)";
	case ncclInternalError:
		return "internal error";
	case ncclInvalidArgument:
		return "invalid argument";
	case ncclInvalidUsage:
		return "invalid usage (the ranks called different collectives or arguments)";
	case ncclRemoteError:
		return "remote process exited or there was a network error";
	case ncclInProgress:
		return "NCCL operation in progress";
	}
	return "unknown result code";
}

/* The text of this thread's last failure, whatever the communicator (NCCL
 * too keeps one per process, not per communicator); "" when none. */
const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return ns_last_error();
}
