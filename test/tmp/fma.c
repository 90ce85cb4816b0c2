#include <pthread.h>
#include <stdio.h>
#include <time.h>
typedef float v16 __attribute__((vector_size(64)));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
#define D(i) v16 a##i = m * (float)i;
#define F(i) a##i = a##i * m + m;
static void *work(void *arg) {
  v16 m; for (int i = 0; i < 16; i++) m[i] = 0.999999f;
  __asm__ volatile("" : "+v"(m));
  D(0) D(1) D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11)
  for (long n = 0; n < 100000000L; n++) { F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) }
  v16 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11; *(float *)arg = s[0]; return NULL;
}
int main(void) {
  float r[2]; double t = now(); work(&r[0]); double one = now() - t;
  pthread_t th[2]; t = now(); for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, work, &r[i]); for (int i = 0; i < 2; i++) pthread_join(th[i], NULL); double two = now() - t;
  printf("1 thread %.3f s (%.2f G zmm-FMA/s), 2 threads %.3f s (%.2f G zmm-FMA/s total)\n", one, 1.2 / one, two, 2.4 / two);
}
