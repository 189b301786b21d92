/* The pod sandbox ("pause") process of wanwide's images (hack/images.sh):
 * blocks until SIGINT/SIGTERM, reaps children it inherits as PID 1.
 * Written for this project; behaves as Kubernetes' pause does. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_exit_signal(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("wanwide-pause\n");
    return 0;
  }
  if (getpid() != 1) fprintf(stderr, "pause: warning: not PID 1\n");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_exit_signal;
  if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) return 1;
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGCHLD, &sa, NULL) < 0) return 2;
  for (;;) pause();
  return 42;
}
