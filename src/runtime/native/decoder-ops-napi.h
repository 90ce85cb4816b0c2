/* N-API bindings of decoder-ops.h, included by paged-attention.c after its array helpers. Every
 * length is checked against the arrays before anything is read or written, so a wrong call throws
 * a RangeError and touches nothing. */

static void free_packed(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  Packed *w = data;
  free(w->data);
  free(w);
}

static int int_arg(napi_env env, napi_value value, int minimum, int *out, const char *message) {
  if (napi_get_value_int32(env, value, out) != napi_ok || *out < minimum) return fail(env, message);
  return 1;
}

static int floats_of(napi_env env, napi_value value, size_t wanted, const float **out, const char *name) {
  Array a;
  if (!array_of(env, value, &a, name)) return 0;
  if (a.type != napi_float32_array || a.length < wanted) {
    char message[128];
    snprintf(message, sizeof message, "%s must be a Float32Array of at least %zu", name, wanted);
    return fail(env, message);
  }
  *out = a.data;
  return 1;
}

static napi_value arguments(napi_env env, napi_callback_info info, size_t count, napi_value *argv, const char *usage) {
  size_t argc = count;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < count) napi_throw_error(env, NULL, usage);
  return argc < count ? NULL : argv[0];
}

/* packLinear(weight, in, out, transposed): the [in, out] weight (transposed: given as its
 * [out, in] transpose) packed into panels, an external value. */
static napi_value pack_linear_call(napi_env env, napi_callback_info info) {
  napi_value argv[4], result;
  if (!arguments(env, info, 4, argv, "packLinear(weight, inFeatures, outFeatures, transposed)")) return NULL;
  int in, out;
  bool transposed;
  const float *w;
  if (!int_arg(env, argv[1], 1, &in, "inFeatures must be a positive integer") || !int_arg(env, argv[2], 1, &out, "outFeatures must be a positive integer")) return NULL;
  if (napi_get_value_bool(env, argv[3], &transposed) != napi_ok) return fail(env, "transposed must be a boolean"), NULL;
  if (!floats_of(env, argv[0], (size_t)in * out, &w, "weight")) return NULL;
  Packed *packed = malloc(sizeof *packed);
  /* Packed weights of 2 MiB or more start on a 2 MiB boundary and are advised onto huge pages:
   * streaming them then misses the TLB once per 2 MiB rather than per 4 KiB (a step of the
   * copier at one row 11.65 -> 10.78 ms, interleaved). */
  const size_t huge = (size_t)2 << 20, bytes = packed_bytes(in, out);
  const int use_huge = bytes >= huge;
  float *data = packed ? aligned_alloc(use_huge ? huge : 64, bytes) : NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (data && use_huge) madvise(data, bytes & ~(huge - 1), MADV_HUGEPAGE);
#endif
  if (!data) return free(packed), napi_throw_error(env, NULL, "packLinear: out of memory"), NULL;
  *packed = (Packed){in, out, (out + PANEL - 1) / PANEL, data};
  pack_weight(w, in, out, transposed, data);
  napi_create_external(env, packed, free_packed, NULL, &result);
  napi_adjust_external_memory(env, (int64_t)packed_bytes(in, out), &(int64_t){0});
  return result;
}

/* linear(packed, x, rows, y, threads): y[rows, out] = x[rows, in] . weight. */
static napi_value linear_call(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!arguments(env, info, 5, argv, "linear(packed, x, rows, y, threads)")) return NULL;
  Packed *w = NULL;
  if (napi_get_value_external(env, argv[0], (void **)&w) != napi_ok || !w) return fail(env, "packed must be packLinear's value"), NULL;
  int rows, threads;
  const float *x, *y;
  if (!int_arg(env, argv[2], 0, &rows, "rows must be a non-negative integer") || !int_arg(env, argv[4], 1, &threads, "threads must be a positive integer")) return NULL;
  if (!floats_of(env, argv[1], (size_t)rows * w->in, &x, "x") || !floats_of(env, argv[3], (size_t)rows * w->out, &y, "y")) return NULL;
  EnvData *data = NULL;
  napi_get_instance_data(env, (void **)&data);
  if (rows > 0) run_linear(data ? &data->pool : NULL, w, x, (float *)y, rows, threads);
  return NULL;
}

/* gatherColumns(packed, ids, out): out[t] = column ids[t] of the packed weight (a tied
 * embedding's rows from the lm_head packed from its table); every id is checked first. */
static napi_value gather_columns_call(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!arguments(env, info, 3, argv, "gatherColumns(packed, ids, out)")) return NULL;
  Packed *w = NULL;
  if (napi_get_value_external(env, argv[0], (void **)&w) != napi_ok || !w) return fail(env, "packed must be packLinear's value"), NULL;
  Array ids;
  if (!array_of(env, argv[1], &ids, "ids")) return NULL;
  if (ids.type != napi_bigint64_array) return fail(env, "ids must be a BigInt64Array"), NULL;
  const int64_t *id = ids.data;
  for (size_t t = 0; t < ids.length; t++)
    if (id[t] < 0 || id[t] >= w->out) return fail(env, "ids must be columns of the packed weight (0 .. outFeatures - 1)"), NULL;
  const float *out;
  if (!floats_of(env, argv[2], ids.length * (size_t)w->in, &out, "out")) return NULL;
  gather_columns(w, id, (int)ids.length, (float *)out);
  return NULL;
}

/* The rows, width and eps of a norm call (arguments at `rows_at`, `rows_at` + 1 and `eps_at`). */
static int norm_shape(napi_env env, const napi_value *argv, int rows_at, int eps_at, int *rows, int *width, float *eps) {
  double value;
  if (!int_arg(env, argv[rows_at], 0, rows, "rows must be a non-negative integer") || !int_arg(env, argv[rows_at + 1], 1, width, "width must be a positive integer")) return 0;
  if (napi_get_value_double(env, argv[eps_at], &value) != napi_ok || !(value >= 0)) return fail(env, "eps must be a non-negative number");
  *eps = (float)value;
  return 1;
}

/* rmsNorm(x, rows, width, weight, eps, out) */
static napi_value rms_norm_call(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!arguments(env, info, 6, argv, "rmsNorm(x, rows, width, weight, eps, out)")) return NULL;
  int rows, width;
  float eps;
  const float *x, *weight, *out;
  if (!norm_shape(env, argv, 1, 4, &rows, &width, &eps)) return NULL;
  const size_t n = (size_t)rows * width;
  if (!floats_of(env, argv[0], n, &x, "x") || !floats_of(env, argv[3], (size_t)width, &weight, "weight") || !floats_of(env, argv[5], n, &out, "out")) return NULL;
  rms_norm_rows(x, rows, width, weight, eps, (float *)out);
  return NULL;
}

/* addRmsNorm(residual, update, rows, width, weight, eps, sum, normed): sum = residual + update, normed = rmsNorm(sum). */
static napi_value add_rms_norm_call(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!arguments(env, info, 8, argv, "addRmsNorm(residual, update, rows, width, weight, eps, sum, normed)")) return NULL;
  int rows, width;
  float eps;
  const float *residual, *update, *weight, *sum, *normed;
  if (!norm_shape(env, argv, 2, 5, &rows, &width, &eps)) return NULL;
  const size_t n = (size_t)rows * width;
  if (!floats_of(env, argv[0], n, &residual, "residual") || !floats_of(env, argv[1], n, &update, "update") || !floats_of(env, argv[4], (size_t)width, &weight, "weight") ||
      !floats_of(env, argv[6], n, &sum, "sum") || !floats_of(env, argv[7], n, &normed, "normed"))
    return NULL;
  for (size_t i = 0; i < n; i++) ((float *)sum)[i] = residual[i] + update[i];
  rms_norm_rows(sum, rows, width, weight, eps, (float *)normed);
  return NULL;
}

/* rope(x, tokens, heads, dim, positions, inverseFrequencies, factor): in place over each head's first 2 x inverseFrequencies.length dimensions. */
static napi_value rope_call(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  if (!arguments(env, info, 7, argv, "rope(x, tokens, heads, dim, positions, inverseFrequencies, factor)")) return NULL;
  int tokens, heads, dim;
  double factor;
  const float *x, *inverse;
  Array positions, frequencies;
  if (!int_arg(env, argv[1], 0, &tokens, "tokens must be a non-negative integer") || !int_arg(env, argv[2], 1, &heads, "heads must be a positive integer") || !int_arg(env, argv[3], 2, &dim, "dim must be at least 2"))
    return NULL;
  if (napi_get_value_double(env, argv[6], &factor) != napi_ok) return fail(env, "factor must be a number"), NULL;
  if (!floats_of(env, argv[0], (size_t)tokens * heads * dim, &x, "x") || !array_of(env, argv[4], &positions, "positions") || !array_of(env, argv[5], &frequencies, "inverseFrequencies")) return NULL;
  if (positions.type != napi_bigint64_array || positions.length < (size_t)tokens) return fail(env, "positions must be a BigInt64Array of at least tokens"), NULL;
  if (frequencies.type != napi_float32_array || frequencies.length < 1 || frequencies.length * 2 > (size_t)dim) return fail(env, "inverseFrequencies must be a Float32Array of 1 .. dim / 2"), NULL;
  inverse = frequencies.data;
  rope_rows((float *)x, tokens, heads, dim, positions.data, inverse, (int)frequencies.length, (float)factor);
  return NULL;
}

/* gatedActivation(gate, up, count, kind): gate = act(gate) x up; kind 0 silu, 1 gelu (tanh). */
static napi_value gated_call(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  if (!arguments(env, info, 4, argv, "gatedActivation(gate, up, count, kind)")) return NULL;
  int count, kind;
  const float *gate, *up;
  if (!int_arg(env, argv[2], 0, &count, "count must be a non-negative integer") || !int_arg(env, argv[3], 0, &kind, "kind must be 0 (silu) or 1 (gelu_tanh)")) return NULL;
  if (kind > GELU_TANH) return fail(env, "kind must be 0 (silu) or 1 (gelu_tanh)"), NULL;
  if (!floats_of(env, argv[0], (size_t)count, &gate, "gate") || !floats_of(env, argv[1], (size_t)count, &up, "up")) return NULL;
  gated_rows((float *)gate, up, (size_t)count, kind);
  return NULL;
}

static void register_decoder_ops(napi_env env, napi_value exports) {
  const struct {
    const char *name;
    napi_callback call;
  } calls[] = {{"packLinear", pack_linear_call}, {"linear", linear_call}, {"gatherColumns", gather_columns_call}, {"rmsNorm", rms_norm_call}, {"addRmsNorm", add_rms_norm_call}, {"rope", rope_call}, {"gatedActivation", gated_call}};
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    napi_value fn;
    napi_create_function(env, calls[i].name, NAPI_AUTO_LENGTH, calls[i].call, NULL, &fn);
    napi_set_named_property(env, exports, calls[i].name, fn);
  }
}
