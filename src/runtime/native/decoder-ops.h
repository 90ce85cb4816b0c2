/* The dense decoder layer's operations at a few rows (src/runners/native-layers.ts): a linear over
 * weights packed once into column panels, RMSNorm (with the residual add), RoPE, the gated MLP's
 * activation. Included by paged-attention.c, which registers them; portable C with GCC's vector
 * extensions, which -march=native lowers to the machine's widest registers.
 *
 * Why: at 1-8 rows a decode or verify step is bound by reading the weights once. ONNX Runtime's
 * fp32 MatMul (MLAS) reads a packed weight panel and computes it at a few rows without overlapping
 * the two: measured on the copier's shapes, 1 -> 5 rows took a segmented step from 12.0 to
 * 16.0-17.2 ms. Here each panel row of 64 columns is loaded once and multiplied into every row's
 * accumulators while the next panels are prefetched: 1 -> 5 rows 9.7 -> 10.5 ms over the same
 * 116 M weights (test/tmp measurement, bench/results/2026-12-07-native-layers). */

#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() _mm_pause()
#else
#define SPIN_PAUSE() ((void)0)
#endif

#define PANEL 64         /* columns a panel holds: four 16-float vectors */
#define LINEAR_ROWS 8    /* rows whose accumulators stay in registers (8 x 4 vectors) */
#define PANEL_AHEAD 16   /* panel rows prefetched ahead of the one being multiplied */

typedef float v16 __attribute__((vector_size(64), aligned(64)));

/* A linear's weight [in, out] packed for linear_rows: panel p holds columns p*64 .. p*64+63 of
 * every input row, contiguous ([in][64]); columns past `out` are zeros. */
typedef struct {
  int in, out, panels;
  float *data;
} Packed;

static size_t packed_bytes(int in, int out) { return sizeof(float) * (size_t)in * PANEL * ((out + PANEL - 1) / PANEL); }

static void pack_weight(const float *restrict w, int in, int out, float *restrict to) {
  const int panels = (out + PANEL - 1) / PANEL;
  for (int p = 0; p < panels; p++) {
    float *panel = to + (size_t)p * in * PANEL;
    const int first = p * PANEL, count = out - first < PANEL ? out - first : PANEL;
    for (int k = 0; k < in; k++) {
      memcpy(panel + (size_t)k * PANEL, w + (size_t)k * out + first, sizeof(float) * count);
      memset(panel + (size_t)k * PANEL + count, 0, sizeof(float) * (PANEL - count));
    }
  }
}

/* y[r, panel columns] for rows first .. first+count-1 (count <= LINEAR_ROWS) and panels p0 .. p1-1. */
static void linear_panels(const Packed *w, const float *restrict x, float *restrict y, int first, int count, int p0, int p1) {
  const int in = w->in;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    memset(acc, 0, sizeof acc);
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int k = 0; k < in; k++) {
      const float *row = panel + (size_t)k * PANEL;
      __builtin_prefetch(row + PANEL * PANEL_AHEAD, 0, 3);
      __builtin_prefetch(row + PANEL * PANEL_AHEAD + 16, 0, 3);
      __builtin_prefetch(row + PANEL * PANEL_AHEAD + 32, 0, 3);
      __builtin_prefetch(row + PANEL * PANEL_AHEAD + 48, 0, 3);
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

/* ---- a pool of threads kept for the layer's linears ------------------------------------------
 * A linear takes ~0.1-2 ms; starting a thread costs tens of microseconds, so the helpers are
 * started once per JavaScript environment and wait between calls: they spin briefly (the next
 * linear of the layer follows within microseconds), then sleep on a condition variable, so an idle
 * engine, or ONNX Runtime's segment running between the layers, does not lose a core to them. */

#define SPIN_ROUNDS 20000

typedef struct {
  const Packed *w;
  const float *x;
  float *y;
  int rows, parts;
} LinearJob;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  atomic_int generation; /* bumped per job; negative: stop */
  atomic_int pending;    /* helpers still on the job */
  int helpers;
  pthread_t ids[MAX_THREADS];
  LinearJob job;
} LinearPool;

/* Part `part` of `parts`: a contiguous run of panels, every row. */
static void linear_part(const LinearJob *job, int part) {
  const int panels = job->w->panels, p0 = (int)((long)panels * part / job->parts), p1 = (int)((long)panels * (part + 1) / job->parts);
  for (int first = 0; first < job->rows; first += LINEAR_ROWS) {
    const int count = job->rows - first < LINEAR_ROWS ? job->rows - first : LINEAR_ROWS;
    linear_panels(job->w, job->x, job->y, first, count, p0, p1);
  }
}

typedef struct {
  LinearPool *pool;
  int index; /* 1 .. helpers: the part it computes */
} Helper;

static void *linear_helper(void *arg) {
  Helper helper = *(Helper *)arg;
  free(arg);
  LinearPool *pool = helper.pool;
  int seen = 0;
  for (;;) {
    int generation = atomic_load(&pool->generation);
    for (int spin = 0; generation == seen && spin < SPIN_ROUNDS; spin++) {
      SPIN_PAUSE();
      generation = atomic_load(&pool->generation);
    }
    if (generation == seen) {
      pthread_mutex_lock(&pool->lock);
      while ((generation = atomic_load(&pool->generation)) == seen) pthread_cond_wait(&pool->wake, &pool->lock);
      pthread_mutex_unlock(&pool->lock);
    }
    if (generation < 0) return NULL;
    seen = generation;
    if (helper.index < pool->job.parts) linear_part(&pool->job, helper.index);
    atomic_fetch_sub(&pool->pending, 1);
  }
}

/* Grows the pool to `helpers` threads (never shrinks); returns how many there are. */
static int grow_pool(LinearPool *pool, int helpers) {
  while (pool->helpers < helpers && pool->helpers < MAX_THREADS) {
    Helper *helper = malloc(sizeof *helper);
    if (!helper) break;
    *helper = (Helper){pool, pool->helpers + 1};
    if (pthread_create(&pool->ids[pool->helpers], NULL, linear_helper, helper) != 0) {
      free(helper);
      break;
    }
    pool->helpers++;
  }
  return pool->helpers;
}

static void run_linear(LinearPool *pool, const Packed *w, const float *x, float *y, int rows, int threads) {
  const int helpers = pool && threads > 1 ? grow_pool(pool, threads - 1) : 0;
  int parts = helpers + 1 < threads ? helpers + 1 : threads;
  if (parts > w->panels) parts = w->panels;
  if (parts <= 1) {
    linear_part(&(LinearJob){w, x, y, rows, 1}, 0);
    return;
  }
  pool->job = (LinearJob){w, x, y, rows, parts};
  atomic_store(&pool->pending, helpers);
  pthread_mutex_lock(&pool->lock);
  atomic_fetch_add(&pool->generation, 1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  linear_part(&pool->job, 0);
  while (atomic_load(&pool->pending) > 0) SPIN_PAUSE();
}

static void stop_pool(LinearPool *pool) {
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->generation, -1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->helpers; i++) pthread_join(pool->ids[i], NULL);
  pool->helpers = 0;
}

/* ---- the elementwise operations (one thread: at a few rows they take microseconds) ---------- */

/* out = x / sqrt(mean(x^2) + eps) * weight, per row of `width`. */
static void rms_norm_rows(const float *restrict x, int rows, int width, const float *restrict weight, float eps, float *restrict out) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (size_t)r * width;
    float sum = 0;
    for (int i = 0; i < width; i++) sum += row[i] * row[i];
    const float scale = 1.0f / sqrtf(sum / width + eps);
    for (int i = 0; i < width; i++) out[(size_t)r * width + i] = row[i] * scale * weight[i];
  }
}

/* RoPE, Hugging Face's rotate-half pairs (i, i + rotary/2) of each head's first `rotary`
 * dimensions, in place; the angle is rounded to float32 as the graph computes it
 * (kernels/rotary-embedding.ts), cos and sin are multiplied by `factor`. */
static void rope_rows(float *restrict x, int tokens, int heads, int dim, const int64_t *restrict positions, const float *restrict inverse, int half, float factor) {
  for (int t = 0; t < tokens; t++) {
    const float position = (float)positions[t];
    for (int i = 0; i < half; i++) {
      const float angle = position * inverse[i], c = cosf(angle) * factor, s = sinf(angle) * factor;
      for (int h = 0; h < heads; h++) {
        float *head = x + ((size_t)t * heads + h) * dim;
        const float a = head[i], b = head[i + half];
        head[i] = a * c - b * s;
        head[i + half] = b * c + a * s;
      }
    }
  }
}

enum { SILU = 0, GELU_TANH = 1 };

/* gate[i] = act(gate[i]) * up[i]. */
static void gated_rows(float *restrict gate, const float *restrict up, size_t count, int kind) {
  if (kind == SILU) {
    for (size_t i = 0; i < count; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
  } else {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (size_t i = 0; i < count; i++) {
      const float g = gate[i];
      gate[i] = 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g))) * up[i];
    }
  }
}
