/* user.h - a uid in words for messages: its user name, or "uid N" where the
 * user database does not know it (a job's user may exist on the compute
 * nodes only). */
#ifndef GK_USER_H
#define GK_USER_H

#include <stddef.h>
#include <sys/types.h>

void gk_user_name(uid_t uid, char *buf, size_t n);

#endif
