// Decode attention that reads the paged KV pool in place: one query token per sequence, its
// context's K/V read straight from the blocks its block table names (no gather, no copy), plus
// the new token's own K/V. An experiment to measure what a fused kernel would buy over ONNX
// Runtime's Gather + MatMul form on this machine (kernels/measure-native-attention.ts); not used
// by the server. Layouts are the paged graph's (kernels/paged-attention.ts):
//   q [B, H, D]; k_new, v_new [B, KVH, D]; pools [KVH, NB, BS, D]; tables [B, max_blocks] int32;
//   past [B] int32 (positions already in the pool); out [B, H, D].
// Each (sequence, kv head) pair is one unit of work: its G = H / KVH query heads share every K/V
// row, so each row is read from memory once for all of them.
#include <math.h>
#include <node_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const float *q, *k_new, *v_new, *key_pool, *value_pool;
  const int32_t *tables, *past;
  float *out;
  int batch, heads, kv_heads, dim, num_blocks, block_size, max_blocks;
  int first, last; /* work units [first, last) */
} Job;

/* Scores of the G query heads against `count` consecutive K rows (one block's worth), dim D. */
static inline __attribute__((always_inline)) void block_scores(const float *restrict q, const float *restrict k, int count, int groups, int dim, float scale, float *restrict scores, int n, int p0) {
  for (int r = 0; r < count; r++) {
    const float *restrict kr = k + (size_t)r * dim;
    for (int g = 0; g < groups; g++) {
      const float *restrict qg = q + (size_t)g * dim;
      float s = 0.0f;
      for (int d = 0; d < dim; d++) s += qg[d] * kr[d];
      scores[(size_t)g * n + p0 + r] = s * scale;
    }
  }
}

static inline __attribute__((always_inline)) void block_values(const float *restrict v, int count, int groups, int dim, const float *restrict scores, int n, int p0, float *restrict out) {
  for (int r = 0; r < count; r++) {
    const float *restrict vr = v + (size_t)r * dim;
    for (int g = 0; g < groups; g++) {
      const float w = scores[(size_t)g * n + p0 + r];
      float *restrict og = out + (size_t)g * dim;
      for (int d = 0; d < dim; d++) og[d] += w * vr[d];
    }
  }
}

static inline __attribute__((always_inline)) void attend_dim(const Job *job, int unit, float *scores, const int dim, const int groups) {
  const int b = unit / job->kv_heads, h = unit % job->kv_heads;
  const int bs = job->block_size;
  const int past = job->past[b], n = past + 1;
  const float scale = 1.0f / sqrtf((float)dim);
  const float *q = job->q + ((size_t)b * job->heads + (size_t)h * groups) * dim;
  const int32_t *table = job->tables + (size_t)b * job->max_blocks;
  const size_t block_floats = (size_t)bs * dim;
  const float *key_head = job->key_pool + (size_t)h * job->num_blocks * block_floats;
  const float *value_head = job->value_pool + (size_t)h * job->num_blocks * block_floats;
  const int blocks = (past + bs - 1) / bs;
  /* scores[g * n + p]: the pool's blocks in table order, then the new token. */
  for (int i = 0; i < blocks; i++) {
    if (i + 1 < blocks) __builtin_prefetch(key_head + (size_t)table[i + 1] * block_floats);
    const int count = past - i * bs < bs ? past - i * bs : bs;
    block_scores(q, key_head + (size_t)table[i] * block_floats, count, groups, dim, scale, scores, n, i * bs);
  }
  block_scores(q, job->k_new + ((size_t)b * job->kv_heads + h) * dim, 1, groups, dim, scale, scores, n, past);
  for (int g = 0; g < groups; g++) {
    float *row = scores + (size_t)g * n, max = -INFINITY, sum = 0.0f;
    for (int p = 0; p < n; p++) max = row[p] > max ? row[p] : max;
    for (int p = 0; p < n; p++) sum += (row[p] = expf(row[p] - max));
    const float inv = 1.0f / sum;
    for (int p = 0; p < n; p++) row[p] *= inv;
  }
  float *out = job->out + ((size_t)b * job->heads + (size_t)h * groups) * dim;
  memset(out, 0, sizeof(float) * (size_t)groups * dim);
  for (int i = 0; i < blocks; i++) {
    if (i + 1 < blocks) __builtin_prefetch(value_head + (size_t)table[i + 1] * block_floats);
    const int count = past - i * bs < bs ? past - i * bs : bs;
    block_values(value_head + (size_t)table[i] * block_floats, count, groups, dim, scores, n, i * bs, out);
  }
  block_values(job->v_new + ((size_t)b * job->kv_heads + h) * dim, 1, groups, dim, scores, n, past, out);
}

/* The head size (and query heads per kv head) as constants where they are the common ones, so the compiler unrolls and vectorizes the row loops fully. */
static void attend(const Job *job, int unit, float *scores) {
  const int groups = job->heads / job->kv_heads;
  if (job->dim == 64 && groups == 4) attend_dim(job, unit, scores, 64, 4);
  else if (job->dim == 64) attend_dim(job, unit, scores, 64, groups);
  else if (job->dim == 128 && groups == 4) attend_dim(job, unit, scores, 128, 4);
  else if (job->dim == 128) attend_dim(job, unit, scores, 128, groups);
  else attend_dim(job, unit, scores, job->dim, groups);
}

static void *run_job(void *arg) {
  const Job *job = arg;
  int longest = 0;
  for (int b = 0; b < job->batch; b++) longest = job->past[b] + 1 > longest ? job->past[b] + 1 : longest;
  float *scores = malloc(sizeof(float) * (size_t)longest * (job->heads / job->kv_heads));
  for (int unit = job->first; unit < job->last; unit++) attend(job, unit, scores);
  free(scores);
  return NULL;
}

static void *data_of(napi_env env, napi_value value) {
  void *data = NULL;
  size_t length = 0;
  napi_typedarray_type type;
  napi_value buffer;
  size_t offset = 0;
  napi_get_typedarray_info(env, value, &type, &length, &data, &buffer, &offset);
  return data;
}

/* decode(q, kNew, vNew, keyPool, valuePool, tables, past, out, dims Int32Array[7], threads) */
static napi_value decode(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 10) {
    napi_throw_error(env, NULL, "decode(q, kNew, vNew, keyPool, valuePool, tables, past, out, dims, threads)");
    return NULL;
  }
  const int32_t *dims = data_of(env, argv[8]);
  int32_t threads = 1;
  napi_get_value_int32(env, argv[9], &threads);
  Job base = {data_of(env, argv[0]), data_of(env, argv[1]), data_of(env, argv[2]), data_of(env, argv[3]), data_of(env, argv[4]),
              data_of(env, argv[5]), data_of(env, argv[6]), data_of(env, argv[7]),
              dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], 0, 0};
  const int units = base.batch * base.kv_heads;
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  pthread_t ids[64];
  Job jobs[64];
  for (int t = 0; t < threads; t++) {
    jobs[t] = base;
    jobs[t].first = (int)((long)units * t / threads);
    jobs[t].last = (int)((long)units * (t + 1) / threads);
    if (t > 0) pthread_create(&ids[t], NULL, run_job, &jobs[t]);
  }
  run_job(&jobs[0]);
  for (int t = 1; t < threads; t++) pthread_join(ids[t], NULL);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "decode", NAPI_AUTO_LENGTH, decode, NULL, &fn);
  napi_set_named_property(env, exports, "decode", fn);
  return exports;
}
