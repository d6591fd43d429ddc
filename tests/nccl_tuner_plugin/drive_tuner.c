/* Drives NCCL's example tuner plugin (NVIDIA/nccl plugins/tuner/example/plugin.c, compiled
 * unmodified with the example's own headers) as NCCL does (src/enqueue.cc ncclGetAlgoInfo): init
 * for a communicator of NRANKS ranks on NNODES nodes, which reads NCCL_TUNER_CONFIG_FILE; then per
 * query getCollInfo on a cost table, and NCCL's choice from the table it leaves (topoGetAlgoInfo:
 * the least entry >= 0, NCCL_ALGO_PROTO_IGNORE skipped).
 * Usage: drive_tuner NRANKS NNODES < QUERIES
 * A query line: COLLECTIVE BYTES COST... (NCCL_NUM_ALGORITHMS x NCCL_NUM_PROTOCOLS costs, algorithm
 * major, as NCCL's collCostTable; COLLECTIVE in plugin.c's spelling). An answer line per query:
 * ALGORITHM PROTOCOL NCHANNELS ZEROED (the plugin's *nChannels; ZEROED 1 when the plugin set an
 * entry to 0.0). The plugin's INFO log goes to stderr. Exit 0 when every call succeeded, 1 otherwise. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tuner.h"

extern const ncclTuner_v6_t ncclTunerPlugin_v6;

static const char* const algo_names[NCCL_NUM_ALGORITHMS] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* const proto_names[NCCL_NUM_PROTOCOLS] = {"ll", "ll128", "simple"};
static const char* const coll_names[NCCL_NUM_FUNCTIONS] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level > NCCL_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int main(int argc, char** argv) {
  size_t ranks = 0, nodes = 0;
  if (argc != 3 || sscanf(argv[1], "%zu", &ranks) != 1 || sscanf(argv[2], "%zu", &nodes) != 1) {
    fprintf(stderr, "usage: drive_tuner NRANKS NNODES < QUERIES\n");
    return 1;
  }
  void* ctx = NULL;
  if (ncclTunerPlugin_v6.init(&ctx, 0, ranks, nodes, logger, NULL, NULL) != ncclSuccess) {
    fprintf(stderr, "init failed\n");
    return 1;
  }
  char coll[64];
  unsigned long long bytes;
  while (scanf("%63s %llu", coll, &bytes) == 2) {
    int f = -1;
    for (int i = 0; i < NCCL_NUM_FUNCTIONS; ++i)
      if (strcmp(coll, coll_names[i]) == 0) f = i;
    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
        if (scanf("%f", &table[a][p]) != 1) f = -1;
    if (f < 0) {
      fprintf(stderr, "bad query for %s\n", coll);
      return 1;
    }
    float before[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    memcpy(before, table, sizeof table);
    int channels = 0;
    if (ncclTunerPlugin_v6.getCollInfo(ctx, (ncclFunc_t)f, (size_t)bytes, 1, (float**)table, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0,
                                       &channels) != ncclSuccess) {
      fprintf(stderr, "getCollInfo failed\n");
      return 1;
    }
    int algo = -1, proto = -1, zeroed = 0;
    float least = 3.4e38f;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
        if (table[a][p] != before[a][p] && table[a][p] == 0.0f) zeroed = 1;
        if (table[a][p] == NCCL_ALGO_PROTO_IGNORE) continue;
        if (table[a][p] >= 0.0f && table[a][p] < least) algo = a, proto = p, least = table[a][p];
      }
    if (algo < 0) {
      fprintf(stderr, "no algorithm left in the table\n");
      return 1;
    }
    printf("%s %s %d %d\n", algo_names[algo], proto_names[proto], channels, zeroed);
  }
  ncclTunerPlugin_v6.finalize(ctx);
  return 0;
}
