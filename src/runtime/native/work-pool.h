/* Threads the module keeps per JavaScript environment for its parallel calls (the layer ops'
 * linears, attention). A linear takes 0.1-2 ms and a layer's attention about as much; starting a
 * thread costs tens of microseconds, as much as such a call's whole share of work (measured: the
 * attention's second thread started per call made a one-sequence step's attention 1.46 -> 2.90
 * ms). So helpers are started once and wait between calls: they spin briefly (the layer's next
 * call follows within microseconds), then sleep on a condition variable, so an idle engine, or
 * ONNX Runtime's segment running between the calls, does not lose a core to them. Each helper
 * keeps its own attention scratch (KeptScratch), freed when it stops. Included by
 * paged-attention.c after KeptScratch. */

#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() _mm_pause()
#else
#define SPIN_PAUSE() ((void)0)
#endif

/* Pauses a helper spins through before it sleeps: ~50 µs on these machines (a pause ~20 ns), what
 * the JavaScript and elementwise work between a layer's linears takes. Not longer: between
 * attention calls ONNX Runtime runs a segment on as many threads as there are cores, and a helper
 * still spinning there takes one of them from it. */
#define SPIN_ROUNDS 2500

/* A task's share: part 1 .. parts-1 run on helpers with their own scratch; part 0 on the caller. */
typedef void (*PoolTask)(void *arg, int part, KeptScratch *scratch);

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  atomic_int generation; /* bumped per task; negative: stop */
  atomic_int pending;    /* helpers still on the task */
  int helpers;
  pthread_t ids[MAX_THREADS];
  PoolTask task;
  void *arg;
  int parts;
} WorkPool;

typedef struct {
  WorkPool *pool;
  int index; /* 1 .. helpers: the part it computes */
} Helper;

static void *pool_helper(void *arg) {
  Helper helper = *(Helper *)arg;
  free(arg);
  WorkPool *pool = helper.pool;
  KeptScratch scratch = {0};
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
    if (generation < 0) break;
    seen = generation;
    if (helper.index < pool->parts) pool->task(pool->arg, helper.index, &scratch);
    atomic_fetch_sub(&pool->pending, 1);
  }
  free_scratch(&scratch.s);
  return NULL;
}

/* Grows the pool to `helpers` threads (never shrinks); returns how many there are. */
static int grow_pool(WorkPool *pool, int helpers) {
  while (pool->helpers < helpers && pool->helpers < MAX_THREADS - 1) {
    Helper *helper = malloc(sizeof *helper);
    if (!helper) break;
    *helper = (Helper){pool, pool->helpers + 1};
    if (pthread_create(&pool->ids[pool->helpers], NULL, pool_helper, helper) != 0) {
      free(helper);
      break;
    }
    pool->helpers++;
  }
  return pool->helpers;
}

/* How many parts a call asking for `threads` can run as (the caller and the helpers there are). */
static int pool_parts(WorkPool *pool, int threads) {
  if (threads <= 1) return 1;
  const int helpers = grow_pool(pool, threads > MAX_THREADS ? MAX_THREADS - 1 : threads - 1);
  return helpers + 1 < threads ? helpers + 1 : threads;
}

/* Runs task(arg, p) for p = 0 .. parts-1 (parts <= pool_parts' answer), part 0 here with `scratch`; returns when all are done. */
static void pool_run(WorkPool *pool, PoolTask task, void *arg, int parts, KeptScratch *scratch) {
  pool->task = task, pool->arg = arg, pool->parts = parts;
  atomic_store(&pool->pending, pool->helpers);
  pthread_mutex_lock(&pool->lock);
  atomic_fetch_add(&pool->generation, 1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  task(arg, 0, scratch);
  while (atomic_load(&pool->pending) > 0) SPIN_PAUSE();
}

static void stop_pool(WorkPool *pool) {
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->generation, -1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->helpers; i++) pthread_join(pool->ids[i], NULL);
  pool->helpers = 0;
}
