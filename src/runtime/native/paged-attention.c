// Paged attention over the block pool, read in place: the attention core of the segmented paged
// decoder (models/qwen3/paged-segments.ts), called by the NativePagedRunner between the ONNX
// Runtime calls of a step. Nothing is gathered or copied: each (sequence, kv head) pair's K/V
// rows are read once, in block-table order, for all of its query heads (and, for a prefill
// chunk, for a tile of its query tokens), scores, softmax and the weighted sum of V in one pass.
//
// Layouts are the paged graph's (kernels/paged-attention.ts):
//   query, out [N, H, D] (flat tokens of many sequences); fresh K/V [N, KVH, D];
//   pools [KVH, num_blocks, block_size, D]; tables [S, max_blocks] int32;
//   query_starts, query_lengths, past_lengths [S] int32.
// write() puts the call's new K/V into the pool first, so query j of sequence s attends pool
// positions 0 .. past_lengths[s] + j (causal), nothing of another sequence; with a sliding window
// w > 0 (the shape's 10th entry, 0 = full) only positions past_lengths[s] + j − w + 1 .. past_lengths[s] + j
// (transformers' rule), and the blocks wholly before the window are never read.
// Activations (query, out, fresh K/V) are float32 or float16 (Uint16Array); the pool float32,
// float16, or int8 (Int8Array: per block, int8 values then a float32 scale per position; K
// in dimension quads within the block; write() quantizes).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <math.h>
#include <node_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* Query tokens of one sequence that share a pass over its K/V rows (prefill chunks). */
#define TILE 8
/* Blocks ahead of the one being read whose lines are prefetched, a row's worth per row read:
 * a block is one 4 KiB page of K (or V) rows, which the hardware prefetcher does not cross, and
 * the blocks of a table lie anywhere in the pool. Measured at 32 x 2,048: ~11 ms a layer without,
 * 6-8 ms with (1 to 4 ahead all alike; the whole next block at once was slower). The prefetches
 * fetch into every cache level (hint 3). They were non-temporal (0) from a measurement that
 * turned out to read an unwritten pool (its zero page, from cache); over a written pool in the
 * engine sweep, 32 streams at 2,048-token prompts, the decode rate with hint 3 was 296 / 314
 * tok/s (fp16 / int8 cache) against 237 / 243 non-temporal (bench/results/2026-12-03-int8-kv-*). */
#ifndef AHEAD
#define AHEAD 2
#endif
#ifndef PREFETCH_HINT
#define PREFETCH_HINT 3
#endif


#define MAX_THREADS 64
/* A call's work (positions read × (query rows + 1), scaled to a head of 64: a position's work is
 * proportional to the head size) below which one thread does it all: about 40 µs of work, what
 * waking a sleeping kept helper can cost (work-pool.h). It was 32,768 while a thread was started
 * per call, which kept a one-sequence step's attention (2 kv heads, 1,000 past positions) on one
 * thread. */
#define PARALLEL_MIN_COST 4096.0

enum { F32 = 0, F16 = 1, I8 = 2 };

typedef struct {
  int seqs, heads, kv_heads, dim, num_blocks, block_size, max_blocks, act_type, kv_type;
  int window; /* sliding window in positions, 0: full causal attention */
} Shape;

/* The first position a query at `position` sees (its window's start; 0 without one). */
static inline int window_start(const Shape *sh, int position) {
  return sh->window > 0 && position - sh->window + 1 > 0 ? position - sh->window + 1 : 0;
}

typedef struct {
  int seq, head, first, count;
  double cost;
} Unit;

typedef struct {
  const void *query;
  const void *key_pool, *value_pool;
  void *out;
  const int32_t *tables, *starts, *lengths, *pasts;
  Shape shape;
  const Unit *units;
  int num_units;
  int next; /* the next unit to take, shared by the threads */
  int longest; /* the most positions any unit sees */
  int failed; /* a thread could not allocate its scratch */
} Job;

/* float16 → float32, eight at a time with F16C: GCC 12 does not vectorize a plain _Float16
 * conversion loop without AVX512-FP16 (measured: the scalar loop made a float16 pool's layer 2x a
 * float32 one's). */
static inline void halves_to_floats(const _Float16 *restrict from, int n, float *restrict to) {
  int i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(from + i))));
#endif
  for (; i < n; i++) to[i] = (float)from[i];
}

/* `count` float32 values of a row in `type` at element offset `at` of `base`. */
static inline void load_row(const void *base, int type, size_t at, int count, float *restrict to) {
  if (type == F32) {
    memcpy(to, (const float *)base + at, sizeof(float) * (size_t)count);
  } else {
    halves_to_floats((const _Float16 *)base + at, count, to);
  }
}

static inline void store_row(void *base, int type, size_t at, int count, const float *restrict from) {
  if (type == F32) {
    memcpy((float *)base + at, from, sizeof(float) * (size_t)count);
  } else {
    _Float16 *restrict to = (_Float16 *)base + at;
    for (int i = 0; i < count; i++) to[i] = (_Float16)from[i];
  }
}

typedef struct {
  float *scores; /* [rows, longest] */
  float *queries; /* [rows, D], scaled (for an int8 cache: as quantized, see load_queries) */
  float *block; /* [block_size, D]: a float16 block as float32 */
  float *acc; /* [rows, D] */
  int8_t *query_codes; /* [rows, D]: an int8 cache's query rows as int8 */
  float *query_scales; /* [rows]: a code's weight, 1 / sqrt(D) included */
  int32_t *query_sums; /* [rows]: the sum of a row's codes */
} Scratch;

static inline __attribute__((always_inline)) float dot(const float *restrict a, const float *restrict b, const int dim) {
  float s = 0.0f;
  for (int d = 0; d < dim; d++) s += a[d] * b[d];
  return s;
}

/* Bytes of one (kv head, block) of a pool. An int8 block is block_size x dim codes followed by
 * each position's float32 scale, so a block stays one contiguous piece that the block manager's
 * copies and the prefetches treat like any other; a V block holds its positions' rows of int8
 * one after another, a K block the same values in dimension quads (see key_code_at). */
static inline size_t block_bytes(const Shape *sh) {
  const size_t rows = (size_t)sh->block_size * sh->dim;
  return sh->kv_type == F32 ? rows * 4 : sh->kv_type == F16 ? rows * 2 : rows + (size_t)sh->block_size * 4;
}

/* Bytes of one stored row (a position of one kv head), its scale apart. */
static inline size_t row_bytes(const Shape *sh) {
  return (size_t)sh->dim * (sh->kv_type == F32 ? 4 : sh->kv_type == F16 ? 2 : 1);
}

/* Where kv head `head`'s blocks start in a pool, and where block `block` of them starts. */
static inline const char *pool_head(const Shape *sh, const void *pool, int head) {
  return (const char *)pool + (size_t)head * sh->num_blocks * block_bytes(sh);
}
static inline const char *block_start(const Shape *sh, const char *head, int32_t block) {
  return head + (size_t)block * block_bytes(sh);
}
static inline const float *block_scales(const Shape *sh, const char *block) {
  return (const float *)(block + (size_t)sh->block_size * sh->dim);
}

/* An int8 K block keeps its codes in quads of dimensions ([dim / 4][block_size][4]), each code
 * + 128 as an unsigned byte: a position's 4 dimensions are one 32-bit lane, so 16 positions' 4
 * dimensions are one vector, the unsigned operand of VNNI's byte dot product (vpdpbusd) against
 * a query's 4 signed codes broadcast; the + 128 adds 128 x (the query's code sum) to every
 * score, taken off once per query row. Head sizes are a multiple of 4 (shape_of). */
#define KEY_CODE_BIAS 128
static inline size_t key_code_at(const Shape *sh, int r, int d) {
  return ((size_t)(d >> 2) * sh->block_size + r) * 4 + (d & 3);
}

/* int8 → float32 times the row's scale. */
static inline void dequantize_row(const int8_t *restrict from, float scale, int n, float *restrict to) {
  int i = 0;
#ifdef __AVX512F__
  /* 16 at a time: left to itself GCC vectorizes this 8 wide. */
  const __m512 factor = _mm512_set1_ps(scale);
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(to + i, _mm512_mul_ps(factor, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(from + i))))));
#endif
  for (; i < n; i++) to[i] = (float)from[i] * scale;
}

/* A block's first `count` rows as float32: the pool itself for float32, converted into scratch
 * otherwise. An int8 K block is stored in dimension quads (key_code_at), its V blocks by rows. */
static inline const float *block_rows(const Shape *sh, const char *block, int count, const int dim, int is_key, float *restrict scratch) {
  if (sh->kv_type == F32) return (const float *)block;
  if (sh->kv_type == F16) {
    halves_to_floats((const _Float16 *)block, count * dim, scratch);
  } else if (is_key) {
    const float *scales = block_scales(sh, block);
    const uint8_t *codes = (const uint8_t *)block;
    for (int r = 0; r < count; r++)
      for (int d = 0; d < dim; d++) scratch[(size_t)r * dim + d] = (float)((int)codes[key_code_at(sh, r, d)] - KEY_CODE_BIAS) * scales[r];
  } else {
    const float *scales = block_scales(sh, block);
    for (int r = 0; r < count; r++) dequantize_row((const int8_t *)block + (size_t)r * dim, scales[r], dim, scratch + (size_t)r * dim);
  }
  return scratch;
}

/* Row r's cache lines of a block that will be read AHEAD blocks from now (and, with row 0, an int8 block's scales). */
static inline void prefetch_row(const Shape *sh, const char *block, int r) {
  const size_t bytes = row_bytes(sh);
  for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(block + (size_t)r * bytes + line, 0, PREFETCH_HINT);
  if (sh->kv_type == I8 && r == 0) __builtin_prefetch(block_scales(sh, block), 0, PREFETCH_HINT);
}

/* A row as int8 codes: symmetric, scale = max |x| / 127 (0 for a zero row), rounded to nearest
 * even. V rows, K rows (then placed in quads by write_kv) and an int8 cache's query rows alike. */
static void quantize_row(const float *restrict from, int n, int8_t *restrict to, float *restrict scale) {
  float largest = 0.0f;
  for (int i = 0; i < n; i++) largest = fabsf(from[i]) > largest ? fabsf(from[i]) : largest;
  const float inverse = largest > 0.0f ? 127.0f / largest : 0.0f;
  for (int i = 0; i < n; i++) {
    const long q = lrintf(from[i] * inverse);
    to[i] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
  }
  *scale = largest / 127.0f;
}

/* The unit's query rows (token t, group g at row t * groups + g) into scratch, as float32 times
 * 1 / sqrt(dim). Against an int8 cache a query row is quantized as its K rows are (int8, one
 * scale a row) and every path scores with those codes: the integer dot products of the VNNI path,
 * the codes times their scale (in `queries`) elsewhere, so the scores do not depend on which
 * path a machine takes. llama.cpp's CPU path does the same for its 8-bit K caches. */
static inline __attribute__((always_inline)) void load_queries(const Job *job, const Unit *u, Scratch *s, const int dim, const int groups) {
  const Shape *sh = &job->shape;
  const int start = job->starts[u->seq];
  const float scale = 1.0f / sqrtf((float)dim);
  for (int t = 0; t < u->count; t++) {
    for (int g = 0; g < groups; g++) {
      const int row = t * groups + g;
      float *q = s->queries + (size_t)row * dim;
      load_row(job->query, sh->act_type, ((size_t)(start + u->first + t) * sh->heads + (size_t)u->head * groups + g) * dim, dim, q);
      if (sh->kv_type == I8) {
        int8_t *codes = s->query_codes + (size_t)row * dim;
        float step;
        quantize_row(q, dim, codes, &step);
        int32_t sum = 0;
        for (int d = 0; d < dim; d++) sum += codes[d], q[d] = (float)codes[d] * step;
        s->query_scales[row] = step * scale;
        s->query_sums[row] = sum;
      }
      for (int d = 0; d < dim; d++) q[d] *= scale;
    }
  }
}

static inline __attribute__((always_inline)) void attend_unit(const Job *job, const Unit *u, Scratch *s, const int dim, const int groups) {
  const Shape *sh = &job->shape;
  const int bs = sh->block_size;
  const int start = job->starts[u->seq], past = job->pasts[u->seq];
  const int first_position = past + u->first; /* the tile's first query sits at this position */
  const int n = first_position + u->count; /* positions the tile's last query sees */
  const int rows = u->count * groups;
  const int32_t *table = job->tables + (size_t)u->seq * sh->max_blocks;
  const char *key_head = pool_head(sh, job->key_pool, u->head), *value_head = pool_head(sh, job->value_pool, u->head);

  load_queries(job, u, s, dim, groups);

  const int blocks = (n + bs - 1) / bs;
  /* Blocks wholly before the tile's first query's window are skipped; positions base .. of the first read get weight 0 where outside a row's window. */
  const int first_block = window_start(sh, first_position) / bs, base = first_block * bs;
  /* Scores: row (t, g) sees positions window_start(first_position + t) .. first_position + t. */
  for (int i = first_block; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    const float *k = block_rows(sh, block_start(sh, key_head, table[i]), count, dim, 1, s->block);
    const char *ahead = i + AHEAD < blocks ? block_start(sh, key_head, table[i + AHEAD]) : NULL;
    for (int r = 0; r < count; r++) {
      if (ahead) prefetch_row(sh, ahead, r);
      const int p = i * bs + r;
      const int t0 = p > first_position ? p - first_position : 0;
      const float *kr = k + (size_t)r * dim;
      for (int t = t0; t < u->count; t++) {
        for (int g = 0; g < groups; g++) {
          const int row = t * groups + g;
          s->scores[(size_t)row * job->longest + p] = dot(s->queries + (size_t)row * dim, kr, dim);
        }
      }
    }
  }
  for (int row = 0; row < rows; row++) {
    const int visible = first_position + row / groups + 1, from = window_start(sh, visible - 1);
    float *sc = s->scores + (size_t)row * job->longest, max = sc[from], sum = 0.0f;
    for (int p = base; p < from; p++) sc[p] = 0.0f;
    for (int p = from + 1; p < visible; p++) max = sc[p] > max ? sc[p] : max;
    for (int p = from; p < visible; p++) sum += (sc[p] = expf(sc[p] - max));
    const float inv = 1.0f / sum;
    for (int p = from; p < visible; p++) sc[p] *= inv;
  }
  memset(s->acc, 0, sizeof(float) * (size_t)rows * dim);
  for (int i = first_block; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    const float *v = block_rows(sh, block_start(sh, value_head, table[i]), count, dim, 0, s->block);
    const char *ahead = i + AHEAD < blocks ? block_start(sh, value_head, table[i + AHEAD]) : NULL;
    if (ahead)
      for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
    /* Row by row over the block (its rows stay in L1), the row's output held in registers across
     * the block's positions: one load per multiply-add instead of two loads and a store. */
    for (int row = 0; row < rows; row++) {
      int visible = first_position + row / groups + 1 - i * bs; /* of this block's positions */
      if (visible > count) visible = count;
      const float *w = s->scores + (size_t)row * job->longest + (size_t)i * bs;
      float *restrict o = s->acc + (size_t)row * dim;
      float sum[dim];
      for (int d = 0; d < dim; d++) sum[d] = o[d];
      for (int r = 0; r < visible; r++) {
        const float *vr = v + (size_t)r * dim;
        for (int d = 0; d < dim; d++) sum[d] += w[r] * vr[d];
      }
      for (int d = 0; d < dim; d++) o[d] = sum[d];
    }
  }
  for (int t = 0; t < u->count; t++) {
    for (int g = 0; g < groups; g++) {
      store_row(job->out, sh->act_type, ((size_t)(start + u->first + t) * sh->heads + (size_t)u->head * groups + g) * dim, dim, s->acc + (size_t)(t * groups + g) * dim);
    }
  }
}

#ifdef __AVX512F__
#include "paged-attention-avx512.h"
#endif

/* The head size and group count as constants where they are the common ones, so the compiler unrolls and vectorizes the row loops fully. */
static void attend(const Job *job, const Unit *u, Scratch *s) {
  const int dim = job->shape.dim, groups = job->shape.heads / job->shape.kv_heads;
#ifdef __AVX512F__
  if (dim == 64 && groups == 4) return attend_unit16(job, u, s, 64, 4);
  if (dim == 64) return attend_unit16(job, u, s, 64, groups);
  if (dim == 128 && groups == 4) return attend_unit16(job, u, s, 128, 4);
  if (dim == 128) return attend_unit16(job, u, s, 128, groups);
  if (dim % 16 == 0 && dim <= 256) return attend_unit16(job, u, s, dim, groups);
  if (dim == 8 && job->shape.kv_type != I8) return attend_unit8(job, u, s, groups);
#endif
  if (dim == 64 && groups == 4) attend_unit(job, u, s, 64, 4);
  else if (dim == 64) attend_unit(job, u, s, 64, groups);
  else if (dim == 128 && groups == 4) attend_unit(job, u, s, 128, 4);
  else if (dim == 128 && groups == 8) attend_unit(job, u, s, 128, 8);
  else if (dim == 128) attend_unit(job, u, s, 128, groups);
  else if (dim == 8) attend_unit(job, u, s, 8, groups);
  else attend_unit(job, u, s, dim, groups);
}

/* The scratch of a call's threads: rows of scores as long as the longest sequence, the queries,
 * one block as float32, the output rows, an int8 cache's query codes. */
typedef struct {
  Scratch s;
  size_t longest, rows, dim, block_size; /* what the buffers were sized for */
} KeptScratch;

static void free_scratch(Scratch *s) {
  free(s->scores);
  free(s->queries);
  free(s->block);
  free(s->acc);
  free(s->query_codes);
  free(s->query_scales);
  free(s->query_sums);
  memset(s, 0, sizeof *s);
}

/* Sizes `kept` for the job (grown, never shrunk); 0 where memory ran out. */
static int fit_scratch(const Job *job, KeptScratch *kept) {
  const Shape *sh = &job->shape;
  const size_t rows = (size_t)TILE * (sh->heads / sh->kv_heads), longest = job->longest > 16 ? job->longest : 16;
  if (kept->s.scores && kept->longest >= longest && kept->rows >= rows && kept->dim >= (size_t)sh->dim && kept->block_size >= (size_t)sh->block_size) return 1;
  free_scratch(&kept->s);
  const size_t dim = (size_t)sh->dim;
  kept->s = (Scratch){
      malloc(sizeof(float) * rows * longest),
      malloc(sizeof(float) * rows * dim),
      malloc(sizeof(float) * (size_t)sh->block_size * dim),
      malloc(sizeof(float) * rows * (dim < 16 ? 16 : dim)),
      malloc(rows * dim),
      malloc(sizeof(float) * rows),
      malloc(sizeof(int32_t) * rows),
  };
  const Scratch *s = &kept->s;
  if (!s->scores || !s->queries || !s->block || !s->acc || !s->query_codes || !s->query_scales || !s->query_sums) {
    free_scratch(&kept->s);
    return 0;
  }
  kept->longest = longest, kept->rows = rows, kept->dim = dim, kept->block_size = (size_t)sh->block_size;
  return 1;
}

static void take_units(Job *job, Scratch *s) {
  for (;;) {
    const int i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->num_units) break;
    attend(job, &job->units[i], s);
  }
}

/* The calling thread's scratch, kept between calls as the module's data for its JavaScript
 * environment (one per engine worker thread, which alone calls it), and each kept helper's own
 * (work-pool.h): freed and allocated afresh, a long context's scores (rows x positions floats)
 * came from mmap on every call and their pages faulted in again on every layer — at 1,000 past
 * positions a quarter of a one-sequence step's attention (the copier's 8 layers: 1.48-1.61 ->
 * 1.14-1.17 ms a decode step, 3.64-4.19 -> 2.77-2.82 ms a 5-position verify step). Freed when the
 * environment is torn down (a thread-exit destructor instead ran after Node had unloaded the
 * module: exit code 139). */
#include "work-pool.h"
#include "decoder-ops.h"

/* What the module keeps per JavaScript environment: the calling thread's attention scratch and the kept threads. */
typedef struct {
  KeptScratch kept;
  WorkPool pool;
} EnvData;

static void release_env(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  EnvData *d = data;
  free_scratch(&d->kept.s);
  stop_pool(&d->pool);
  pthread_mutex_destroy(&d->pool.lock);
  pthread_cond_destroy(&d->pool.wake);
  free(d);
}

/* A thread's share of an attention call: units taken in turn until none are left, with its own scratch. */
static void attention_part(void *arg, int part, KeptScratch *scratch) {
  (void)part;
  Job *job = arg;
  if (!scratch || !fit_scratch(job, scratch)) __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
  else take_units(job, &scratch->s);
}

static int by_cost_descending(const void *a, const void *b) {
  const double x = ((const Unit *)a)->cost, y = ((const Unit *)b)->cost;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* ---- N-API ---------------------------------------------------------------------------------- */

typedef struct {
  void *data;
  size_t length; /* elements */
  napi_typedarray_type type;
} Array;

static int array_of(napi_env env, napi_value value, Array *out, const char *name) {
  bool is = false;
  napi_is_typedarray(env, value, &is);
  if (!is) {
    char message[96];
    snprintf(message, sizeof message, "%s must be a typed array", name);
    napi_throw_type_error(env, NULL, message);
    return 0;
  }
  napi_value buffer;
  size_t offset = 0;
  napi_get_typedarray_info(env, value, &out->type, &out->length, &out->data, &buffer, &offset);
  return 1;
}

static int fail(napi_env env, const char *message) {
  napi_throw_range_error(env, NULL, message);
  return 0;
}

/* The shape Int32Array [seqs, heads, kv_heads, dim, num_blocks, block_size, max_blocks, act_type, kv_type(, window)]. */
static int shape_of(napi_env env, napi_value value, Shape *sh) {
  Array a;
  if (!array_of(env, value, &a, "shape")) return 0;
  if (a.type != napi_int32_array || (a.length != 9 && a.length != 10)) return fail(env, "shape must be an Int32Array of 9 or 10");
  const int32_t *v = a.data;
  *sh = (Shape){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], a.length == 10 ? v[9] : 0};
  if (sh->window < 0) return fail(env, "shape: the sliding window is 0 (none) or a positive number of positions");
  if (sh->seqs < 0 || sh->heads < 1 || sh->kv_heads < 1 || sh->heads % sh->kv_heads != 0 || sh->dim < 1 || sh->num_blocks < 1 || sh->block_size < 1 || sh->max_blocks < 0)
    return fail(env, "shape: heads must be a multiple of kv_heads, sizes positive");
  if ((sh->act_type != F32 && sh->act_type != F16) || (sh->kv_type != F32 && sh->kv_type != F16 && sh->kv_type != I8))
    return fail(env, "shape: activations are 0 (float32) or 1 (float16), the pool also 2 (int8 with a scale per row)");
  if (sh->kv_type == I8 && sh->dim % 4 != 0) return fail(env, "shape: an int8 pool needs a head size that is a multiple of 4 (its K codes are stored in quads of dimensions)");
  return 1;
}

static int typed(napi_env env, const Array *a, int type, size_t wanted, const char *message) {
  const napi_typedarray_type expected = type == F32 ? napi_float32_array : type == F16 ? napi_uint16_array : napi_int8_array;
  if (a->type != expected || a->length < wanted) return fail(env, message);
  return 1;
}

/* The layout arrays, checked against the pool so no index can leave it. Returns the flat token count, or -1. */
static long layout_of(napi_env env, napi_value *argv, const Shape *sh, Array *tables, Array *starts, Array *lengths, Array *pasts) {
  if (!array_of(env, argv[0], tables, "tables") || !array_of(env, argv[1], starts, "queryStarts") || !array_of(env, argv[2], lengths, "queryLengths") || !array_of(env, argv[3], pasts, "pastLengths")) return -1;
  if (tables->type != napi_int32_array || starts->type != napi_int32_array || lengths->type != napi_int32_array || pasts->type != napi_int32_array) return fail(env, "layout arrays must be Int32Arrays"), -1;
  if (tables->length < (size_t)sh->seqs * sh->max_blocks || starts->length < (size_t)sh->seqs || lengths->length < (size_t)sh->seqs || pasts->length < (size_t)sh->seqs) return fail(env, "layout arrays are shorter than the shape says"), -1;
  const int32_t *t = tables->data, *st = starts->data, *ln = lengths->data, *ps = pasts->data;
  long tokens = 0;
  for (int s = 0; s < sh->seqs; s++) {
    if (ln[s] < 0 || ps[s] < 0 || st[s] < 0) return fail(env, "negative start, length or past"), -1;
    const long end = (long)ps[s] + ln[s];
    const long blocks = (end + sh->block_size - 1) / sh->block_size;
    if (blocks > sh->max_blocks) return fail(env, "a sequence needs more blocks than its table row holds"), -1;
    for (long b = 0; b < blocks; b++) {
      const int32_t id = t[(size_t)s * sh->max_blocks + b];
      if (id < 0 || id >= sh->num_blocks) return fail(env, "a block id is outside the pool"), -1;
    }
    if ((long)st[s] + ln[s] > tokens) tokens = (long)st[s] + ln[s];
  }
  return tokens;
}

/* A call's arguments (at least `count`, else a usage error), its shape and checked layout: the
 * first five arguments of both calls. Returns the flat token count, or -1 with an exception pending. */
static long call_of(napi_env env, napi_callback_info info, size_t count, napi_value *argv, const char *usage, Shape *sh, Array *tables, Array *starts, Array *lengths, Array *pasts) {
  size_t argc = count;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < count) return napi_throw_error(env, NULL, usage), -1;
  if (!shape_of(env, argv[0], sh)) return -1;
  return layout_of(env, argv + 1, sh, tables, starts, lengths, pasts);
}

/* A pool's size in its array's elements: for int8, bytes (rows and scales). */
static size_t pool_elements(const Shape *sh) {
  return (size_t)sh->kv_heads * sh->num_blocks * block_bytes(sh) / (sh->kv_type == F32 ? 4 : sh->kv_type == F16 ? 2 : 1);
}

/* write(shape, tables, queryStarts, queryLengths, pastLengths, freshKey, freshValue, keyPool, valuePool) */
static napi_value write_kv(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  Shape sh;
  Array tables, starts, lengths, pasts, fresh[2], pool[2];
  const long tokens = call_of(env, info, 9, argv, "write(shape, tables, queryStarts, queryLengths, pastLengths, freshKey, freshValue, keyPool, valuePool)", &sh, &tables, &starts, &lengths, &pasts);
  if (tokens < 0) return NULL;
  const size_t row = (size_t)sh.kv_heads * sh.dim;
  for (int k = 0; k < 2; k++) {
    if (!array_of(env, argv[5 + k], &fresh[k], "fresh K/V") || !array_of(env, argv[7 + k], &pool[k], "pool")) return NULL;
    if (!typed(env, &fresh[k], sh.act_type, (size_t)tokens * row, "fresh K/V: wrong type or shorter than [tokens, kv_heads, dim]")) return NULL;
    if (!typed(env, &pool[k], sh.kv_type, pool_elements(&sh), "pool: wrong type or shorter than [kv_heads, num_blocks, block_size, dim] (int8: and a float32 scale per row)")) return NULL;
  }
  const int32_t *t = tables.data, *st = starts.data, *ln = lengths.data, *ps = pasts.data;
  float *buffer = malloc(sizeof(float) * (size_t)sh.dim);
  int8_t *codes = malloc((size_t)sh.dim);
  if (!buffer || !codes) return free(buffer), free(codes), napi_throw_error(env, NULL, "out of memory"), NULL;
  for (int k = 0; k < 2; k++) {
    for (int s = 0; s < sh.seqs; s++) {
      for (int j = 0; j < ln[s]; j++) {
        const int p = ps[s] + j;
        const int32_t block = t[(size_t)s * sh.max_blocks + p / sh.block_size];
        const int r = p % sh.block_size;
        for (int h = 0; h < sh.kv_heads; h++) {
          load_row(fresh[k].data, sh.act_type, (size_t)(st[s] + j) * row + (size_t)h * sh.dim, sh.dim, buffer);
          char *at = (char *)block_start(&sh, pool_head(&sh, pool[k].data, h), block);
          if (sh.kv_type == I8) {
            /* K (k = 0) in dimension quads of biased codes, V by rows: each as its pass reads it. */
            if (k == 0) {
              quantize_row(buffer, sh.dim, codes, (float *)block_scales(&sh, at) + r);
              for (int d = 0; d < sh.dim; d++) ((uint8_t *)at)[key_code_at(&sh, r, d)] = (uint8_t)(codes[d] + KEY_CODE_BIAS);
            } else {
              quantize_row(buffer, sh.dim, (int8_t *)at + (size_t)r * sh.dim, (float *)block_scales(&sh, at) + r);
            }
          } else {
            store_row(at, sh.kv_type, (size_t)r * sh.dim, sh.dim, buffer);
          }
        }
      }
    }
  }
  free(buffer);
  free(codes);
  return NULL;
}

/* attend(shape, tables, queryStarts, queryLengths, pastLengths, query, keyPool, valuePool, out, threads) */
static napi_value attend_call(napi_env env, napi_callback_info info) {
  napi_value argv[10];
  Job job;
  memset(&job, 0, sizeof job);
  Array tables, starts, lengths, pasts, query, pools[2], out;
  const long tokens = call_of(env, info, 10, argv, "attend(shape, tables, queryStarts, queryLengths, pastLengths, query, keyPool, valuePool, out, threads)", &job.shape, &tables, &starts, &lengths, &pasts);
  if (tokens < 0) return NULL;
  const Shape *sh = &job.shape;
  if (!array_of(env, argv[5], &query, "query") || !array_of(env, argv[6], &pools[0], "keyPool") || !array_of(env, argv[7], &pools[1], "valuePool") || !array_of(env, argv[8], &out, "out")) return NULL;
  const size_t flat = (size_t)tokens * sh->heads * sh->dim;
  if (!typed(env, &query, sh->act_type, flat, "query: wrong type or shorter than [tokens, heads, dim]") || !typed(env, &out, sh->act_type, flat, "out: wrong type or shorter than [tokens, heads, dim]")) return NULL;
  for (int k = 0; k < 2; k++)
    if (!typed(env, &pools[k], sh->kv_type, pool_elements(sh), "pool: wrong type or shorter than [kv_heads, num_blocks, block_size, dim] (int8: and a float32 scale per row)")) return NULL;
  int32_t threads = 1;
  napi_get_value_int32(env, argv[9], &threads);
  threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;

  const int32_t *ln = lengths.data, *ps = pasts.data;
  long num_units = 0;
  for (int s = 0; s < sh->seqs; s++) num_units += (long)sh->kv_heads * ((ln[s] + TILE - 1) / TILE);
  Unit *units = malloc(sizeof(Unit) * (size_t)(num_units > 0 ? num_units : 1));
  if (!units) return napi_throw_error(env, NULL, "out of memory"), NULL;
  long u = 0;
  int longest = 1;
  for (int s = 0; s < sh->seqs; s++) {
    for (int first = 0; first < ln[s]; first += TILE) {
      const int count = ln[s] - first < TILE ? ln[s] - first : TILE;
      const int seen = ps[s] + first + count;
      longest = seen > longest ? seen : longest;
      /* Scores are kept by position, but only the window's positions are read. */
      const int read = sh->window > 0 && sh->window + count < seen ? sh->window + count : seen;
      for (int h = 0; h < sh->kv_heads; h++) units[u++] = (Unit){s, h, first, count, (double)read * (count + 1) * sh->dim / 64.0};
    }
  }
  /* Largest first, so the threads' last units are small and they finish together. */
  qsort(units, (size_t)num_units, sizeof(Unit), by_cost_descending);
  job.query = query.data;
  job.key_pool = pools[0].data;
  job.value_pool = pools[1].data;
  job.out = out.data;
  job.tables = tables.data;
  job.starts = starts.data;
  job.lengths = lengths.data;
  job.pasts = pasts.data;
  job.units = units;
  job.num_units = (int)num_units;
  job.longest = longest;
  if (threads > num_units) threads = num_units > 0 ? (int)num_units : 1;
  /* Waking a helper can cost tens of microseconds, as much as a small call's whole work: short
   * contexts and small batches run on the calling thread. */
  double total = 0;
  for (long i = 0; i < num_units; i++) total += units[i].cost;
  if (total < PARALLEL_MIN_COST) threads = 1;
  EnvData *data = NULL;
  napi_get_instance_data(env, (void **)&data);
  const int parts = data ? pool_parts(&data->pool, threads) : 1;
  if (parts > 1) pool_run(&data->pool, attention_part, &job, parts, &data->kept);
  else attention_part(&job, 0, data ? &data->kept : NULL);
  free(units);
  if (job.failed) napi_throw_error(env, NULL, "attend: out of memory for the threads' scratch");
  return NULL;
}

/* adviseHugePages(pool): asks the kernel (Linux's madvise) to back the pool's whole 2 MiB pages
 * with huge pages, where transparent huge pages are on "madvise" (the default of many
 * distributions). A decode step visits each sequence's blocks, 1-4 KiB each, anywhere in a pool of
 * hundreds of MiB: with 4 KiB pages nearly every block is a TLB miss, and ORT's work between the
 * layers evicts what the TLB held. Called before the pool is first written, so the first touch
 * of each 2 MiB page already gets a huge one. Returns whether the advice was taken. */
static napi_value advise_huge_pages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  Array a;
  if (argc < 1 || !array_of(env, argv[0], &a, "pool")) return NULL;
  int taken = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const size_t huge = (size_t)2 << 20, element = a.type == napi_float32_array ? 4 : a.type == napi_uint16_array ? 2 : 1;
  const uintptr_t begin = ((uintptr_t)a.data + huge - 1) & ~(uintptr_t)(huge - 1), end = ((uintptr_t)a.data + a.length * element) & ~(uintptr_t)(huge - 1);
  if (end > begin) taken = madvise((void *)begin, end - begin, MADV_HUGEPAGE) == 0;
#endif
  napi_get_boolean(env, taken, &result);
  return result;
}

#include "decoder-ops-napi.h"

NAPI_MODULE_INIT() {
  napi_value fn;
  EnvData *data = calloc(1, sizeof *data);
  if (data) {
    pthread_mutex_init(&data->pool.lock, NULL);
    pthread_cond_init(&data->pool.wake, NULL);
    if (napi_set_instance_data(env, data, release_env, NULL) != napi_ok) free(data);
  }
  napi_create_function(env, "attend", NAPI_AUTO_LENGTH, attend_call, NULL, &fn);
  napi_set_named_property(env, exports, "attend", fn);
  napi_create_function(env, "write", NAPI_AUTO_LENGTH, write_kv, NULL, &fn);
  napi_set_named_property(env, exports, "write", fn);
  napi_create_function(env, "adviseHugePages", NAPI_AUTO_LENGTH, advise_huge_pages, NULL, &fn);
  napi_set_named_property(env, exports, "adviseHugePages", fn);
  register_decoder_ops(env, exports);
  return exports;
}
