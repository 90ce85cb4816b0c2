#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include <sys/mman.h>
static int HUGE;
#define MAX_THREADS 16
typedef struct { struct { int x; } s; } KeptScratch;
static void free_scratch(void *p) { (void)p; }
#include "../../src/runtime/native/work-pool.h"
#define PANEL 64
#define LINEAR_ROWS 8
typedef float v16 __attribute__((vector_size(64), aligned(64)));
typedef struct { int in, out, panels; float *data; } Packed;

/* A: sequential k */
static inline __attribute__((always_inline)) void seq_of(const Packed *w, const float *restrict x, float *restrict y, int first, const int count, int p0, int p1) {
  const int in = w->in;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    for (int r = 0; r < count; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (v16){0};
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int k = 0; k < in; k++) {
      const float *row = panel + (size_t)k * PANEL;
      const v16 b0 = *(const v16 *)row, b1 = *(const v16 *)(row + 16), b2 = *(const v16 *)(row + 32), b3 = *(const v16 *)(row + 48);
      for (int r = 0; r < count; r++) {
        const float a = x[(size_t)(first + r) * in + k];
        acc[r][0] += a * b0, acc[r][1] += a * b1, acc[r][2] += a * b2, acc[r][3] += a * b3;
      }
    }
    const int column = p * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
    for (int r = 0; r < count; r++) memcpy(y + (size_t)(first + r) * w->out + column, acc[r], sizeof(float) * width);
  }
}

static int PFD = 16;
static inline __attribute__((always_inline)) void seqpf_of(const Packed *w, const float *restrict x, float *restrict y, int first, const int count, int p0, int p1) {
  const int in = w->in;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    for (int r = 0; r < count; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (v16){0};
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int k = 0; k < in; k++) {
      const float *row = panel + (size_t)k * PANEL;
      __builtin_prefetch(row + PFD * PANEL, 0, 3); __builtin_prefetch(row + PFD * PANEL + 16, 0, 3); __builtin_prefetch(row + PFD * PANEL + 32, 0, 3); __builtin_prefetch(row + PFD * PANEL + 48, 0, 3);
      const v16 b0 = *(const v16 *)row, b1 = *(const v16 *)(row + 16), b2 = *(const v16 *)(row + 32), b3 = *(const v16 *)(row + 48);
      for (int r = 0; r < count; r++) {
        const float a = x[(size_t)(first + r) * in + k];
        acc[r][0] += a * b0, acc[r][1] += a * b1, acc[r][2] += a * b2, acc[r][3] += a * b3;
      }
    }
    const int column = p * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
    for (int r = 0; r < count; r++) memcpy(y + (size_t)(first + r) * w->out + column, acc[r], sizeof(float) * width);
  }
}
/* B: k split, per-vector inner */
static inline __attribute__((always_inline)) void splitc_of(const Packed *w, const float *restrict x, float *restrict y, int first, const int count, int p0, int p1) {
  const int in = w->in, half = in >> 1;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    for (int r = 0; r < count; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (v16){0};
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int j = 0; j < half; j++) {
      const float *lo = panel + (size_t)j * PANEL, *hi = panel + (size_t)(half + j) * PANEL;
      for (int c = 0; c < 4; c++) {
        const v16 a = ((const v16 *)lo)[c], b = ((const v16 *)hi)[c];
        for (int r = 0; r < count; r++) {
          const float *xr = x + (size_t)(first + r) * in;
          acc[r][c] += xr[j] * a;
          acc[r][c] += xr[half + j] * b;
        }
      }
    }
    const int column = p * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
    for (int r = 0; r < count; r++) memcpy(y + (size_t)(first + r) * w->out + column, acc[r], sizeof(float) * width);
  }
}
/* D: k split, rows inner, weights hoisted */
static inline __attribute__((always_inline)) void splitr_of(const Packed *w, const float *restrict x, float *restrict y, int first, const int count, int p0, int p1) {
  const int in = w->in, half = in >> 1;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    for (int r = 0; r < count; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (v16){0};
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int j = 0; j < half; j++) {
      const float *lo = panel + (size_t)j * PANEL, *hi = panel + (size_t)(half + j) * PANEL;
      const v16 a0 = *(const v16 *)lo, a1 = *(const v16 *)(lo + 16), a2 = *(const v16 *)(lo + 32), a3 = *(const v16 *)(lo + 48);
      const v16 b0 = *(const v16 *)hi, b1 = *(const v16 *)(hi + 16), b2 = *(const v16 *)(hi + 32), b3 = *(const v16 *)(hi + 48);
      for (int r = 0; r < count; r++) {
        const float *xr = x + (size_t)(first + r) * in;
        const float s = xr[j], t = xr[half + j];
        acc[r][0] += s * a0, acc[r][1] += s * a1, acc[r][2] += s * a2, acc[r][3] += s * a3;
        acc[r][0] += t * b0, acc[r][1] += t * b1, acc[r][2] += t * b2, acc[r][3] += t * b3;
      }
    }
    const int column = p * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
    for (int r = 0; r < count; r++) memcpy(y + (size_t)(first + r) * w->out + column, acc[r], sizeof(float) * width);
  }
}
/* one row, two panels, sequential k (current) */
static void one_two_panels(const Packed *w, const float *restrict x, float *restrict y, int row, int p0, int p1) {
  const int in = w->in; const float *xs = x + (size_t)row * in; int p = p0;
  for (; p + 1 < p1; p += 2) {
    v16 acc[8]; memset(acc, 0, sizeof acc);
    const float *fp = w->data + (size_t)p * in * PANEL, *sp = fp + (size_t)in * PANEL;
    for (int k = 0; k < in; k++) {
      const v16 *a = (const v16 *)(fp + (size_t)k * PANEL), *b = (const v16 *)(sp + (size_t)k * PANEL);
      for (int c = 0; c < 4; c++) acc[c] += xs[k] * a[c], acc[4 + c] += xs[k] * b[c];
    }
    for (int h = 0; h < 2; h++) memcpy(y + (size_t)row * w->out + (p + h) * PANEL, &acc[4 * h], sizeof(float) * PANEL);
  }
  if (p < p1) seq_of(w, x, y, row, 1, p, p1);
}

static void one_two_panels_pf(const Packed *w, const float *restrict x, float *restrict y, int row, int p0, int p1) {
  const int in = w->in; const float *xs = x + (size_t)row * in; int p = p0;
  for (; p + 1 < p1; p += 2) {
    v16 acc[8]; memset(acc, 0, sizeof acc);
    const float *fp = w->data + (size_t)p * in * PANEL, *sp = fp + (size_t)in * PANEL;
    for (int k = 0; k < in; k++) {
      const v16 *a = (const v16 *)(fp + (size_t)k * PANEL), *b = (const v16 *)(sp + (size_t)k * PANEL);
      for (int c = 0; c < 4; c++) { __builtin_prefetch(fp + (size_t)(k + PFD) * PANEL + 16 * c, 0, 3); __builtin_prefetch(sp + (size_t)(k + PFD) * PANEL + 16 * c, 0, 3); }
      for (int c = 0; c < 4; c++) acc[c] += xs[k] * a[c], acc[4 + c] += xs[k] * b[c];
    }
    for (int h = 0; h < 2; h++) memcpy(y + (size_t)row * w->out + (p + h) * PANEL, &acc[4 * h], sizeof(float) * PANEL);
  }
  if (p < p1) seq_of(w, x, y, row, 1, p, p1);
}
/* one row, two panels, k split (4 streams) */
static void one_two_panels_split(const Packed *w, const float *restrict x, float *restrict y, int row, int p0, int p1) {
  const int in = w->in, half = in >> 1; const float *xs = x + (size_t)row * in; int p = p0;
  for (; p + 1 < p1; p += 2) {
    v16 acc[8]; memset(acc, 0, sizeof acc);
    const float *fp = w->data + (size_t)p * in * PANEL, *sp = fp + (size_t)in * PANEL;
    for (int j = 0; j < half; j++) {
      const v16 *a = (const v16 *)(fp + (size_t)j * PANEL), *b = (const v16 *)(sp + (size_t)j * PANEL);
      const v16 *ah = (const v16 *)(fp + (size_t)(half + j) * PANEL), *bh = (const v16 *)(sp + (size_t)(half + j) * PANEL);
      for (int c = 0; c < 4; c++) { acc[c] += xs[j] * a[c]; acc[c] += xs[half + j] * ah[c]; acc[4 + c] += xs[j] * b[c]; acc[4 + c] += xs[half + j] * bh[c]; }
    }
    for (int h = 0; h < 2; h++) memcpy(y + (size_t)row * w->out + (p + h) * PANEL, &acc[4 * h], sizeof(float) * PANEL);
  }
  if (p < p1) splitc_of(w, x, y, row, 1, p, p1);
}
#define DISPATCH(name) static void name(const Packed *w, const float *x, float *y, int first, int count, int p0, int p1) { switch (count) { \
  case 1: name##_of(w,x,y,first,1,p0,p1); break; case 2: name##_of(w,x,y,first,2,p0,p1); break; case 3: name##_of(w,x,y,first,3,p0,p1); break; \
  case 4: name##_of(w,x,y,first,4,p0,p1); break; case 5: name##_of(w,x,y,first,5,p0,p1); break; case 6: name##_of(w,x,y,first,6,p0,p1); break; \
  case 7: name##_of(w,x,y,first,7,p0,p1); break; case 8: name##_of(w,x,y,first,8,p0,p1); break; } }
DISPATCH(seq) DISPATCH(splitc) DISPATCH(splitr) DISPATCH(seqpf)
typedef struct { const Packed *w; const float *x; float *y; int rows, parts, variant; } Job;
static void part_fn(void *arg, int part, KeptScratch *s) {
  (void)s; const Job *job = arg; const int panels = job->w->panels;
  const int p0 = (int)((long)panels * part / job->parts), p1 = (int)((long)panels * (part + 1) / job->parts);
  const int v = job->variant, c = job->rows;
  if (v >= 1) { PFD = v == 1 ? 8 : v == 2 ? 16 : 32; if (c == 1) one_two_panels_pf(job->w, job->x, job->y, 0, p0, p1); else seqpf(job->w, job->x, job->y, 0, c, p0, p1); return; }
  if (c == 1) {
    if (v == 0) one_two_panels(job->w, job->x, job->y, 0, p0, p1);
    else if (v == 1) splitc(job->w, job->x, job->y, 0, 1, p0, p1);
    else if (v == 2) one_two_panels_split(job->w, job->x, job->y, 0, p0, p1);
    else splitr(job->w, job->x, job->y, 0, 1, p0, p1);
  } else {
    if (v == 0) seq(job->w, job->x, job->y, 0, c, p0, p1);
    else if (v == 1 || v == 2) splitc(job->w, job->x, job->y, 0, c, p0, p1);
    else splitr(job->w, job->x, job->y, 0, c, p0, p1);
  }
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  HUGE = argc > 1;
  static WorkPool pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
  const int shapes[7][2] = {{1024, 1024}, {1024, 4096}, {1024, 4096}, {4096, 1024}, {1024, 1024}, {1024, 256}, {1024, 256}};
  Packed ws[7 * 7];
  for (int i = 0; i < 49; i++) {
    Packed *w = &ws[i]; w->in = shapes[i % 7][0]; w->out = shapes[i % 7][1]; w->panels = w->out / 64;
    size_t bytes = (sizeof(float) * w->in * w->out + (2<<20) - 1) & ~(size_t)((2<<20)-1); w->data = aligned_alloc(2<<20, bytes); if (HUGE) madvise(w->data, bytes, MADV_HUGEPAGE);
    for (size_t k = 0; k < (size_t)w->in * w->out; k++) w->data[k] = (float)((k * 2654435761u) % 1000) / 1000.0f - 0.5f;
  }
  float *x = aligned_alloc(64, 8 * 4096 * 4), *y = aligned_alloc(64, 8 * 4096 * 4), *ref = aligned_alloc(64, 8 * 4096 * 4);
  for (int i = 0; i < 8 * 4096; i++) x[i] = (float)(i % 17) / 17.0f;
  const int rowsList[] = {1, 2, 3, 4, 5, 6, 8}; const int nr = 7, nv = 4, reps = 25;
  static double t[4][7][64];
  const int parts = pool_parts(&pool, 2);
  for (int rep = 0; rep < reps + 3; rep++)
    for (int ri = 0; ri < nr; ri++)
      for (int v = 0; v < nv; v++) {
        double s = now();
        for (int i = 0; i < 49; i++) { Job job = {&ws[i], x, y, rowsList[ri], parts, v}; pool_run(&pool, part_fn, &job, parts, NULL); }
        if (rep >= 3) t[v][ri][rep - 3] = now() - s;
      }
  const char *names[] = {"seq+2panel", "pf8", "pf16", "pf32"};
  for (int v = 0; v < nv; v++) { printf("%-20s", names[v]); for (int ri = 0; ri < nr; ri++) { qsort(t[v][ri], reps, sizeof(double), cmp); printf(" r%d=%.2f", rowsList[ri], t[v][ri][reps / 2]); } printf("\n"); }
  /* check: variant agreement at 5 rows */
  for (int v = 0; v < nv; v++) { Job job = {&ws[1], x, v ? y : ref, 5, parts, v}; pool_run(&pool, part_fn, &job, parts, NULL); }
  double md = 0; for (int i = 0; i < 5 * 4096; i++) { double d = y[i] - ref[i]; if (d < 0) d = -d; if (d > md) md = d; } printf("maxdiff %g\n", md);
  { char line[256]; FILE *f = fopen("/proc/self/smaps_rollup", "r"); while (fgets(line, sizeof line, f)) if (strstr(line, "AnonHuge")) printf("%s", line); fclose(f); }
  stop_pool(&pool); return 0;
}
