/* The input file policy of every verb (files.h). */
#include "attest/files.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

const char *attest_file_type_name(mode_t m)
{
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

attest_status attest_file_check_regular(const char *path, const char *what)
{
    ATTEST_RETURN_IF(!path || !path[0], ATTEST_ERR_INVALID_ARGUMENT, "%s%san empty path",
                     what ? what : "", what ? ": " : "");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return attest_fail(ATTEST_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return attest_fail(ATTEST_ERR_IO, "%s: is %s; attest reads %s from regular files only",
                           path, attest_file_type_name(sb.st_mode), what ? what : "input");
    return ATTEST_OK;
}
