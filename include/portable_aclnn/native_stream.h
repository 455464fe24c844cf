// portable-aclnn's extension to CANN's runtime API (not in CANN): an aclrtStream over a native stream the
// application already has, so that operators run in order with the application's own GPU work (PyTorch's current
// stream, for instance). docs/runtime.md, "Streams over native streams".
#ifndef PORTABLE_ACLNN_NATIVE_STREAM_H_
#define PORTABLE_ACLNN_NATIVE_STREAM_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

// Creates *stream over nativeStream (a cudaStream_t; NULL means CUDA's legacy default stream), for the device of the
// calling thread's current context, which must be a CUDA device that owns nativeStream. Such a stream has no thread
// of its own: the calling thread runs each call it is given at once and returns when the call's device work is
// enqueued on nativeStream (making the stream's CUDA device current on that thread, as cudaSetDevice does).
// aclrtSynchronizeStream waits for nativeStream; aclrtDestroyStream waits for it too and leaves it alive (the
// application destroys it, after the aclrtStream). The CPU device has no native streams:
// ACL_ERROR_FEATURE_UNSUPPORTED.
ACL_FUNC_VISIBILITY aclError paclrtCreateStreamFromNative(aclrtStream *stream, void *nativeStream);

#ifdef __cplusplus
}
#endif

#endif  // PORTABLE_ACLNN_NATIVE_STREAM_H_
