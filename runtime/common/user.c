/* user.c - see user.h. */
#include "config.h"
#include "common/user.h"

#include <pwd.h>
#include <stdio.h>

void gk_user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, n, "%s", res->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)uid);
}
