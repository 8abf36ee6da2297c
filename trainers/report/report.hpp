#pragma once
// What `train` prints and writes. The CSV columns are read by scripts and plots: keep them stable.
#include <string>
#include <string_view>

#include "trainers/config/train_config.hpp"
#include "trainers/core/train_result.hpp"

namespace gradsync {

// The run's synchronization one dimension a column (TrainConfig::sync_dimensions), the last columns of every CSV
// that names a run (after the display name's `sync` or `method`, so that readers by position keep theirs).
inline constexpr std::string_view kSyncDimensionColumns = ",family,allreduce,compressor,mode";
// The four fields for `config`, comma-separated, in kSyncDimensionColumns' order.
std::string sync_dimension_fields(const TrainConfig& config);

// The headers are spelled out whole, as the documents quote them (scripts/check_docs.py finds them in the code).
inline constexpr const char* kTrainCsvHeader =
    "sync,model,dataset,np,workers,epochs,batch,lr,seed,wall_s,compute_s,comm_s,train_loss,test_accuracy,images_per_s,"
    "hidden_s,wire_bytes_per_step,family,allreduce,compressor,mode";
static_assert(std::string_view(kTrainCsvHeader).ends_with(kSyncDimensionColumns));

inline constexpr const char* kEpochCsvHeader =
    "method,np,epoch,elapsed_s,test_accuracy,train_loss,images_per_s,compute_s,sync_s,staleness_bound,staleness_mean,"
    "staleness_max,clock_gap_max,wire_bytes_per_step,global_steps,consensus_distance,replica_acc_min,replica_acc_max,"
    "spectral_gap,best_test_accuracy,family,allreduce,compressor,mode";
static_assert(std::string_view(kEpochCsvHeader).ends_with(kSyncDimensionColumns));

// "epoch 2/5  loss 0.3012  test acc 0.9164  183042 img/s  compute 0.41s  sync 0.10s  elapsed 0.95s" (+ PS fields,
// + "hidden 0.20s" when communication overlapped compute). comm_s / sync: communication the workers waited for;
// hidden_s / hidden: communication in flight while they computed; both per worker, summed over the epochs.
// wire_bytes_per_step / wire: EpochReport::wire_bytes_per_step; empty (not shown) when not counted.
std::string format_epoch(const EpochReport& r);
// "done: ring mlp-128 on 2 rank(s) ...", or "... nothing trained" when the result has no epochs (--stop-at-target
// resumed from a checkpoint that had reached the target).
std::string format_summary(const TrainResult& r);
// "in place: 2 recoveries, ranks 2, 3 lost, 2 steps done again, 0.041 s from failures to re-formed runs" (the
// result's recoveries; empty without any).
std::string format_recoveries(const TrainResult& r);
// "target 0.95 reached after 12.31s of training, 5625 global steps" (TrainResult::target_*), or that it was not
// reached, or reached before a resumed checkpoint at a point not known; empty without --target-accuracy.
std::string format_target(const TrainResult& r);
// The family's line about the run's setup on `ranks` processes (SyncFamilyInfo's report.setup_line), e.g. gossip's
// "topology exp on 16 workers (...): 4 peer(s) a step, spectral gap 0.4286" or fedavg's "100 clients (shards:2), 10 a
// round: 1 local epoch(s) of batch 10 from the global model, summed by ring"; empty for most.
std::string describe_family(const TrainConfig& config, int ranks);
std::string csv_row(const TrainConfig& config, const TrainResult& r);

// Appends one kEpochCsvHeader row for `r` to `path` (header first if the file is new or empty).
void append_epoch_csv(const std::string& path, const TrainConfig& config, int ranks, const EpochReport& r);

// Appends `line` to the CSV file `path` (given by `flag`), writing `header` first if the file is new or empty. Throws
// std::runtime_error naming the flag and the path if it cannot be written.
void append_csv_line(const std::string& flag, const std::string& path, const char* header, const std::string& line);

// Appends csv_row to `path`, writing the header first if the file is new or empty. Throws std::runtime_error
// naming the path if it cannot be written.
void append_csv(const std::string& path, const TrainConfig& config, const TrainResult& r);

}  // namespace gradsync
