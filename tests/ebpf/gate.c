// LD_PRELOAD gate for tests/ebpf/run.py: the process announces its PID on stderr and waits
// for a line on stdin before main() runs. The program is mapped by then, so the tools can
// attach by its path with a filter on that PID and count nothing of any other process
// running the same binary.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void tempo_gate(void) {
  char c;
  unsetenv("LD_PRELOAD");
  fprintf(stderr, "tempo-gate: %d\n", (int)getpid());
  while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n') {
  }
}
