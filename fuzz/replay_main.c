/* A main() linked in place of libFuzzer (any compiler): replays every file named on the command
 * line, or every file in a named directory, through LLVMFuzzerTestOneInput. This is how corpora
 * and historical finds run as tests on every build, as zstd and libssh do. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return 1;
    }
    long size = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf || (size > 0 && fread(buf, 1, (size_t)size, f) != (size_t)size)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)size);
    free(buf);
    return 0;
}

static int replay_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort); /* sorted: a stable replay order */
    if (n < 0) return 1;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char child[4096];
            snprintf(child, sizeof child, "%s/%s", path, names[i]->d_name);
            failed |= replay_path(child, count);
        }
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int count = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue; /* libFuzzer-style flags are ignored in replay */
        failed |= replay_path(argv[i], &count);
    }
    printf("replay: %d input(s) ran without a finding\n", count);
    return failed;
}
