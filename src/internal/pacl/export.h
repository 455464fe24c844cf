// Visibility of the internal C++ API that one portable-aclnn library offers the others
// (libascendcl -> libnnopbase -> libopapi). Not installed; not for applications.
#ifndef PACL_EXPORT_H_
#define PACL_EXPORT_H_

#define PACL_INTERNAL_API __attribute__((visibility("default")))

#endif  // PACL_EXPORT_H_
