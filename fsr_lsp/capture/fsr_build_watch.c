/* fsr capture --build: an LD_PRELOAD library that writes down each nvcc the build starts, by
 * whatever path (a Makefile's $(CUDA_HOME)/bin/nvcc, CMake's absolute compiler), as compile
 * database tools do, then starts it unchanged. Each exec and posix_spawn of a program named
 * nvcc appends {"directory": cwd, "arguments": [path, args...]} to $FSR_BUILD_LOG under a lock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int is_nvcc(const char* path) {
  if (!path) return 0;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strcmp(base, "nvcc") == 0;
}

static void put_string(FILE* f, const char* s) {
  fputc('"', f);
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static void record(const char* path, char* const argv[]) {
  const char* log = getenv("FSR_BUILD_LOG");
  if (!log || !*log || !is_nvcc(path)) return;
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  flock(fd, LOCK_EX);
  FILE* f = fdopen(fd, "a");
  if (!f) { close(fd); return; }
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
  fputs("{\"directory\": ", f);
  put_string(f, cwd);
  fputs(", \"arguments\": [", f);
  put_string(f, path);
  for (int i = 1; argv && argv[i]; ++i) {
    fputs(", ", f);
    put_string(f, argv[i]);
  }
  fputs("]}\n", f);
  fclose(f); /* unlocks */
}

/* the path a name without a slash runs, as execvp looks it up */
static const char* on_path(const char* file, char* out, size_t size) {
  if (!file || strchr(file, '/')) return file;
  const char* path = getenv("PATH");
  if (!path) return file;
  while (*path) {
    const char* end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    if (n + strlen(file) + 2 <= size) {
      memcpy(out, n ? path : ".", n ? n : 1);
      size_t at = n ? n : 1;
      out[at] = '/';
      strcpy(out + at + 1, file);
      if (access(out, X_OK) == 0) return out;
    }
    if (!end) break;
    path = end + 1;
  }
  return file;
}

typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*spawn_fn)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                        char* const[], char* const[]);

int execve(const char* path, char* const argv[], char* const envp[]) {
  record(path, argv);
  return ((execve_fn)dlsym(RTLD_NEXT, "execve"))(path, argv, envp);
}

int execv(const char* path, char* const argv[]) {
  record(path, argv);
  return ((int (*)(const char*, char* const[]))dlsym(RTLD_NEXT, "execv"))(path, argv);
}

int execvp(const char* file, char* const argv[]) {
  char found[4096];
  record(on_path(file, found, sizeof found), argv);
  return ((int (*)(const char*, char* const[]))dlsym(RTLD_NEXT, "execvp"))(file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  char found[4096];
  record(on_path(file, found, sizeof found), argv);
  return ((execve_fn)dlsym(RTLD_NEXT, "execvpe"))(file, argv, envp);
}

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  record(path, argv);
  return ((spawn_fn)dlsym(RTLD_NEXT, "posix_spawn"))(pid, path, actions, attr, argv, envp);
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  char found[4096];
  record(on_path(file, found, sizeof found), argv);
  return ((spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp"))(pid, file, actions, attr, argv, envp);
}
