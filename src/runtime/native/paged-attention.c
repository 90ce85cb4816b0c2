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
// positions 0 .. past_lengths[s] + j (causal), nothing of another sequence.
// Activations (query, out, fresh K/V) and the pool are each float32 or float16 (Uint16Array).
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

/* Query tokens of one sequence that share a pass over its K/V rows (prefill chunks). */
#define TILE 8
/* Blocks ahead of the one being read whose lines are prefetched, a row's worth per row read:
 * a block is one 4 KiB page of K (or V) rows, which the hardware prefetcher does not cross, and
 * the blocks of a table lie anywhere in the pool. Measured at 32 x 2,048: ~11 ms a layer without,
 * 6-8 ms with (1 to 4 ahead all alike; the whole next block at once was slower). The prefetches
 * are non-temporal: a decode step reads each K/V row once, and with the default (keep in every
 * level) those 67 MB a layer at 32 x 2,048 evicted the next segment's weights, so ORT's share of a
 * step grew with the context (42 ms at past 160, 53 ms at 2,048); non-temporal, 39-49 ms there,
 * and the kernel itself 25 -> 18.5 ms a step (bench/kernels/measure-decode-step.ts). */
#define AHEAD 2


#define MAX_THREADS 64
/* Positions × query rows of a call below which one thread does it all. */
#define PARALLEL_MIN_COST 32768.0

enum { F32 = 0, F16 = 1 };

typedef struct {
  int seqs, heads, kv_heads, dim, num_blocks, block_size, max_blocks, act_type, kv_type;
} Shape;

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
  float *queries; /* [rows, D], scaled */
  float *block; /* [block_size, D]: a float16 block as float32 */
  float *acc; /* [rows, D] */
} Scratch;

static inline __attribute__((always_inline)) float dot(const float *restrict a, const float *restrict b, const int dim) {
  float s = 0.0f;
  for (int d = 0; d < dim; d++) s += a[d] * b[d];
  return s;
}

/* A block's rows as float32: the pool itself for float32, converted into scratch for float16. */
static inline const float *block_rows(const Job *job, const void *pool_head, int32_t block, int count, const int dim, float *restrict scratch) {
  const size_t at = (size_t)block * job->shape.block_size * dim;
  if (job->shape.kv_type == F32) return (const float *)pool_head + at;
  const _Float16 *restrict from = (const _Float16 *)pool_head + at;
  halves_to_floats(from, count * dim, scratch);
  return scratch;
}

/* Where a block of a kv head's pool starts, in bytes (for the prefetches AHEAD blocks on). */
static inline const char *block_start(const Job *job, const void *pool_head, int32_t block, const int dim) {
  const size_t element = job->shape.kv_type == F32 ? 4 : 2;
  return (const char *)pool_head + (size_t)block * job->shape.block_size * dim * element;
}

/* Row r's cache lines of a block that will be read AHEAD blocks from now. */
static inline void prefetch_row(const char *block, int r, const int dim, size_t element) {
  const size_t bytes = (size_t)dim * element;
  for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(block + (size_t)r * bytes + line, 0, 0);
}

static inline __attribute__((always_inline)) void attend_unit(const Job *job, const Unit *u, Scratch *s, const int dim, const int groups) {
  const Shape *sh = &job->shape;
  const int bs = sh->block_size;
  const int start = job->starts[u->seq], past = job->pasts[u->seq];
  const int first_position = past + u->first; /* the tile's first query sits at this position */
  const int n = first_position + u->count; /* positions the tile's last query sees */
  const int rows = u->count * groups;
  const float scale = 1.0f / sqrtf((float)dim);
  const int32_t *table = job->tables + (size_t)u->seq * sh->max_blocks;
  const size_t head_elements = (size_t)sh->num_blocks * bs * dim;
  const size_t element = sh->kv_type == F32 ? 4 : 2;
  const void *key_head = (const char *)job->key_pool + (size_t)u->head * head_elements * element;
  const void *value_head = (const char *)job->value_pool + (size_t)u->head * head_elements * element;

  for (int t = 0; t < u->count; t++) {
    for (int g = 0; g < groups; g++) {
      float *q = s->queries + (size_t)(t * groups + g) * dim;
      load_row(job->query, sh->act_type, ((size_t)(start + u->first + t) * sh->heads + (size_t)u->head * groups + g) * dim, dim, q);
      for (int d = 0; d < dim; d++) q[d] *= scale;
    }
  }

  const int blocks = (n + bs - 1) / bs;
  /* Scores: row (t, g) sees positions 0 .. first_position + t. */
  for (int i = 0; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    const float *k = block_rows(job, key_head, table[i], count, dim, s->block);
    const char *ahead = i + AHEAD < blocks ? block_start(job, key_head, table[i + AHEAD], dim) : NULL;
    for (int r = 0; r < count; r++) {
      if (ahead) prefetch_row(ahead, r, dim, element);
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
    const int visible = first_position + row / groups + 1;
    float *sc = s->scores + (size_t)row * job->longest, max = sc[0], sum = 0.0f;
    for (int p = 1; p < visible; p++) max = sc[p] > max ? sc[p] : max;
    for (int p = 0; p < visible; p++) sum += (sc[p] = expf(sc[p] - max));
    const float inv = 1.0f / sum;
    for (int p = 0; p < visible; p++) sc[p] *= inv;
  }
  memset(s->acc, 0, sizeof(float) * (size_t)rows * dim);
  for (int i = 0; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    const float *v = block_rows(job, value_head, table[i], count, dim, s->block);
    const char *ahead = i + AHEAD < blocks ? block_start(job, value_head, table[i + AHEAD], dim) : NULL;
    if (ahead)
      for (int r = 0; r < count; r++) prefetch_row(ahead, r, dim, element);
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

/* The head size and group count as constants where they are the common ones, so the compiler unrolls and vectorizes the row loops fully. */
static void attend(const Job *job, const Unit *u, Scratch *s) {
  const int dim = job->shape.dim, groups = job->shape.heads / job->shape.kv_heads;
  if (dim == 64 && groups == 4) attend_unit(job, u, s, 64, 4);
  else if (dim == 64) attend_unit(job, u, s, 64, groups);
  else if (dim == 128 && groups == 4) attend_unit(job, u, s, 128, 4);
  else if (dim == 128 && groups == 8) attend_unit(job, u, s, 128, 8);
  else if (dim == 128) attend_unit(job, u, s, 128, groups);
  else attend_unit(job, u, s, dim, groups);
}

static void *run_units(void *arg) {
  Job *job = arg;
  const Shape *sh = &job->shape;
  const int rows = TILE * (sh->heads / sh->kv_heads);
  Scratch s = {
      malloc(sizeof(float) * (size_t)rows * (size_t)job->longest),
      malloc(sizeof(float) * (size_t)rows * sh->dim),
      malloc(sizeof(float) * (size_t)sh->block_size * sh->dim),
      malloc(sizeof(float) * (size_t)rows * sh->dim),
  };
  if (!s.scores || !s.queries || !s.block || !s.acc) {
    __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
  } else {
    for (;;) {
      const int i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
      if (i >= job->num_units) break;
      attend(job, &job->units[i], &s);
    }
  }
  free(s.scores);
  free(s.queries);
  free(s.block);
  free(s.acc);
  return NULL;
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

/* The shape Int32Array [seqs, heads, kv_heads, dim, num_blocks, block_size, max_blocks, act_type, kv_type]. */
static int shape_of(napi_env env, napi_value value, Shape *sh) {
  Array a;
  if (!array_of(env, value, &a, "shape")) return 0;
  if (a.type != napi_int32_array || a.length != 9) return fail(env, "shape must be an Int32Array of 9");
  const int32_t *v = a.data;
  *sh = (Shape){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
  if (sh->seqs < 0 || sh->heads < 1 || sh->kv_heads < 1 || sh->heads % sh->kv_heads != 0 || sh->dim < 1 || sh->num_blocks < 1 || sh->block_size < 1 || sh->max_blocks < 0)
    return fail(env, "shape: heads must be a multiple of kv_heads, sizes positive");
  if ((sh->act_type != F32 && sh->act_type != F16) || (sh->kv_type != F32 && sh->kv_type != F16)) return fail(env, "shape: element types are 0 (float32) or 1 (float16)");
  return 1;
}

static int typed(napi_env env, const Array *a, int type, size_t wanted, const char *message) {
  const napi_typedarray_type expected = type == F32 ? napi_float32_array : napi_uint16_array;
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

/* write(shape, tables, queryStarts, queryLengths, pastLengths, freshKey, freshValue, keyPool, valuePool) */
static napi_value write_kv(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  Shape sh;
  Array tables, starts, lengths, pasts, fresh[2], pool[2];
  const long tokens = call_of(env, info, 9, argv, "write(shape, tables, queryStarts, queryLengths, pastLengths, freshKey, freshValue, keyPool, valuePool)", &sh, &tables, &starts, &lengths, &pasts);
  if (tokens < 0) return NULL;
  const size_t row = (size_t)sh.kv_heads * sh.dim, head_elements = (size_t)sh.num_blocks * sh.block_size * sh.dim;
  for (int k = 0; k < 2; k++) {
    if (!array_of(env, argv[5 + k], &fresh[k], "fresh K/V") || !array_of(env, argv[7 + k], &pool[k], "pool")) return NULL;
    if (!typed(env, &fresh[k], sh.act_type, (size_t)tokens * row, "fresh K/V: wrong type or shorter than [tokens, kv_heads, dim]")) return NULL;
    if (!typed(env, &pool[k], sh.kv_type, sh.kv_heads * head_elements, "pool: wrong type or shorter than [kv_heads, num_blocks, block_size, dim]")) return NULL;
  }
  const int32_t *t = tables.data, *st = starts.data, *ln = lengths.data, *ps = pasts.data;
  float *buffer = malloc(sizeof(float) * (size_t)sh.dim);
  if (!buffer) return napi_throw_error(env, NULL, "out of memory"), NULL;
  for (int k = 0; k < 2; k++) {
    for (int s = 0; s < sh.seqs; s++) {
      for (int j = 0; j < ln[s]; j++) {
        const int p = ps[s] + j;
        const size_t slot = ((size_t)t[(size_t)s * sh.max_blocks + p / sh.block_size] * sh.block_size + p % sh.block_size) * sh.dim;
        for (int h = 0; h < sh.kv_heads; h++) {
          load_row(fresh[k].data, sh.act_type, (size_t)(st[s] + j) * row + (size_t)h * sh.dim, sh.dim, buffer);
          store_row(pool[k].data, sh.kv_type, (size_t)h * head_elements + slot, sh.dim, buffer);
        }
      }
    }
  }
  free(buffer);
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
  const size_t head_elements = (size_t)sh->num_blocks * sh->block_size * sh->dim;
  if (!array_of(env, argv[5], &query, "query") || !array_of(env, argv[6], &pools[0], "keyPool") || !array_of(env, argv[7], &pools[1], "valuePool") || !array_of(env, argv[8], &out, "out")) return NULL;
  const size_t flat = (size_t)tokens * sh->heads * sh->dim;
  if (!typed(env, &query, sh->act_type, flat, "query: wrong type or shorter than [tokens, heads, dim]") || !typed(env, &out, sh->act_type, flat, "out: wrong type or shorter than [tokens, heads, dim]")) return NULL;
  for (int k = 0; k < 2; k++)
    if (!typed(env, &pools[k], sh->kv_type, sh->kv_heads * head_elements, "pool: wrong type or shorter than [kv_heads, num_blocks, block_size, dim]")) return NULL;
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
      for (int h = 0; h < sh->kv_heads; h++) units[u++] = (Unit){s, h, first, count, (double)seen * (count + 1)};
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
  /* Starting a thread costs tens of microseconds, as much as a small call's whole work: short
   * contexts and small batches run on the calling thread. */
  double total = 0;
  for (long i = 0; i < num_units; i++) total += units[i].cost;
  if (total < PARALLEL_MIN_COST) threads = 1;
  pthread_t ids[MAX_THREADS];
  int started = 1;
  for (int i = 1; i < threads; i++) {
    if (pthread_create(&ids[i], NULL, run_units, &job) != 0) break;
    started++;
  }
  run_units(&job);
  for (int i = 1; i < started; i++) pthread_join(ids[i], NULL);
  free(units);
  if (job.failed) napi_throw_error(env, NULL, "attend: out of memory for the threads' scratch");
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "attend", NAPI_AUTO_LENGTH, attend_call, NULL, &fn);
  napi_set_named_property(env, exports, "attend", fn);
  napi_create_function(env, "write", NAPI_AUTO_LENGTH, write_kv, NULL, &fn);
  napi_set_named_property(env, exports, "write", fn);
  return exports;
}
