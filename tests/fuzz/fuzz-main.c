/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stand-alone driver for builds without libFuzzer (gcc): runs the target on
 * every file named on the command line and on every file in every directory
 * named, once, like `fuzzer -runs=0 DIR...`. Arguments starting with '-' are
 * libFuzzer options and are ignored. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        char *buf = NULL;
        size_t size = 0, cap = 0;
        for (;;) {
                if (size == cap) {
                        cap = cap ? cap * 2 : 4096;
                        buf = realloc(buf, cap);
                        if (!buf)
                                abort();
                }
                size_t n = fread(buf + size, 1, cap - size, f);
                size += n;
                if (n == 0)
                        break;
        }
        fclose(f);
        (void) LLVMFuzzerTestOneInput((const uint8_t *) buf, size);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (argv[i][0] == '-')
                        continue;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (run_file(argv[i]) < 0)
                                return 1;
                        n++;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                if (!d)
                        return 1;
                for (struct dirent *de; (de = readdir(d));) {
                        char path[4096];
                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
                        if (run_file(path) < 0)
                                return 1;
                        n++;
                }
                closedir(d);
        }
        printf("%u inputs ran\n", n);
        /* An empty run means a missing corpus, not a pass. */
        return n > 0 ? 0 : 1;
}
