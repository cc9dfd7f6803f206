/*
 * shepherd_protocol.h - the words the runtime (core/control/agent.c) and the shepherd
 * (shepherd/sock.c, checkpoint.c) say to each other on the shepherd's
 * socket, defined once for both sides. One line per packet, spelled exactly;
 * the shepherd refuses anything else. What each means and when it is sent:
 * runtime/shepherd/README.md, "The socket between runtime and shepherd".
 *
 *	runtime   HELLO 1 app              checkpoints itself (application mode)
 *	runtime   HELLO 1 transparent      closing the gate and draining
 *	runtime   READY <name> <0|1>       drained; <name>: its sealed .tmp.ckpt.N.HOST.PID
 *	                                   folder (ckptname.h); 1: it wrote device memory
 *	runtime   REFUSE managed|ipc       holds what the driver cannot checkpoint
 *	runtime   REFUSE opencl            holds OpenCL state CRIU cannot carry
 *	runtime   REFUSE broken <error>    its CUDA context holds a sticky error
 *	runtime   REFUSE capture           a stream capture did not end in time
 *	runtime   REFUSE nccl              its NCCL ranks could not be brought to a common point
 *	shepherd  LOCKED                   the driver holds the process locked
 *	shepherd  LOCKED <ckpt.S/proc.PID> the same, and several processes of the
 *	                                   task wrote folders: this one's becomes
 *	                                   that part of the task's checkpoint, where
 *	                                   the runtime loads from once it committed
 *	                                   (runtime/shepherd/proc_parts.c)
 *	shepherd  ABORT <reason>           no checkpoint this time
 */
#ifndef GK_SHEPHERD_PROTOCOL_H
#define GK_SHEPHERD_PROTOCOL_H

/* The longest packet either side sends or reads. */
#define GK_PROTO_MSG_MAX 4096

#define GK_PROTO_HELLO_APP "HELLO 1 app"
#define GK_PROTO_HELLO_TRANSPARENT "HELLO 1 transparent"
#define GK_PROTO_READY "READY"	 /* READY <name> <assisted> */
#define GK_PROTO_REFUSE "REFUSE" /* REFUSE <what> */
#define GK_PROTO_LOCKED "LOCKED" /* LOCKED [<where its part will be>] */
#define GK_PROTO_ABORT "ABORT" /* ABORT <reason> */

/* What REFUSE names (track.h): the driver cannot save managed memory, nor
 * device memory shared with or taken from another process; a context with a
 * sticky error, followed by the error's name. */
#define GK_PROTO_REFUSE_MANAGED "managed"
#define GK_PROTO_REFUSE_IPC "ipc"
#define GK_PROTO_REFUSE_BROKEN "broken"
/* OpenCL state outside the process's memory (a device that is not a CPU), or
 * commands that cannot be drained (a user event not set): CRIU cannot carry
 * it (runtime/core/interpose/opencl.c). */
#define GK_PROTO_REFUSE_OPENCL "opencl"
/* A CUDA stream capture stayed open past GK_GATE_CAPTURE_WAIT_S: draining
 * would invalidate it (runtime/core/interpose/gate.h). */
#define GK_PROTO_REFUSE_CAPTURE "capture"
/* The ranks of an NCCL communicator could not be brought to the same
 * collective, or it could not be taken down (runtime/core/interpose/nccl.h). */
#define GK_PROTO_REFUSE_NCCL "nccl"
/* GPUCKPT_TASKS=nccl, and the process holds no NCCL communicator of all the
 * step's tasks: its part could never be one of the step's set
 * (runtime/core/interpose/nccl.h). */
#define GK_PROTO_REFUSE_NCCL_SET "nccl-set"

/*
 * Besides the socket, two marks the shepherd reads from outside:
 *  - the runtime's agent thread is named GK_AGENT_THREAD (its comm in
 *    /proc/PID/task/TID/comm): a process with the runtime but without that
 *    thread (a child forked without exec) will never report;
 *  - a trigger signal the shepherd sends "as usual" (no checkpoint was
 *    taken: the signal's own course) carries GK_SIGVAL_AS_USUAL through
 *    sigqueue(), so that the runtime's handler lets it through instead of
 *    holding it for a checkpoint.
 */
#define GK_AGENT_THREAD "gpuckpt-agent"
#define GK_SIGVAL_AS_USUAL 0x676b7573 /* "gkus" */

#endif
