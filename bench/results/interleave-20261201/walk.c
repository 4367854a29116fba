// Alternate directory walks over several trees, pass by pass; print t, tree, seconds, files.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static long walk(int dfd, long *bytes) {
  DIR *d = fdopendir(dfd); long n = 0; struct dirent *e;
  if (!d) return 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) continue;
    if (S_ISDIR(st.st_mode)) { int c = openat(dirfd(d), e->d_name, O_RDONLY|O_DIRECTORY); n += walk(c, bytes); }
    else { n++; *bytes += st.st_size; }
  }
  closedir(d); return n;
}
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9; }
int main(int argc, char **argv) {
  double dur = atof(argv[1]); int k = argc - 2; double t0 = now();
  while (now() - t0 < dur) for (int i = 0; i < k; i++) {
    long b = 0; double s = now(); long n = walk(open(argv[2+i], O_RDONLY|O_DIRECTORY), &b); double e = now();
    printf("%.6f %d %.7f %ld\n", s - t0, i, e - s, n);
  }
}
