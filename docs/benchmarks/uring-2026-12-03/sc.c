// sc.c: what one system call costs on this machine (a null call, getppid,
// and fstat of an open descriptor), against which the per-file call counts
// of docs/benchmarks/trees.md read. gcc -O2 -Wall -o sc sc.c && ./sc
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
	const int n = 2000000;
	struct stat st;
	double t = now();
	for (int i = 0; i < n; i++)
		syscall(SYS_getppid);
	printf("getppid: %.0f ns/call\n", (now() - t) / n * 1e9);
	t = now();
	for (int i = 0; i < n; i++)
		fstat(0, &st);
	printf("fstat: %.0f ns/call\n", (now() - t) / n * 1e9);
	return 0;
}
