// One worker process of a data-parallel gptrun job: joins the job (rank 0
// hosts the rendezvous store; every rank connects to it and to a Gloo
// communicator, or NCCL for GPU workers), trains as its rank, and waits for
// every rank at the end so that rank 0's store outlives everyone's use of it.
#ifndef GPTRT_TRAIN_WORKER_H
#define GPTRT_TRAIN_WORKER_H

#include "runtime/dist/WorkerInfo.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <optional>
#include <string>

namespace gptrt::train {

/// Trains as rank `me.rank` of `me.worldSize` (a plain train() when the
/// world has one CPU rank; a GPU worker first takes its GPU, see
/// gpuForWorker, and joins NCCL even alone). `timeout` bounds connecting to
/// the store, the rendezvous and every collective: a rank that died or
/// stalled longer than that makes the others throw instead of hang. Throws
/// std::runtime_error.
float runWorker(const TrainOptions &options, const dist::WorkerInfo &me,
                std::chrono::milliseconds timeout);

/// The CUDA_VISIBLE_DEVICES entry GPU worker `localRank` of `gpuWorkers`
/// takes: entry localRank of `visible` (the user's CUDA_VISIBLE_DEVICES),
/// or GPU localRank when that is empty. Throws std::runtime_error when the
/// list is too short.
std::string gpuForWorker(int localRank, int gpuWorkers,
                         const std::string &visible);

/// The CUDA_VISIBLE_DEVICES entry a worker started by another launcher
/// (srun, torchrun: RANK set, no gptrun --gpus) narrows itself to before
/// its first CUDA call, so that a node's workers take different GPUs as
/// torchrun's do (GPU LOCAL_RANK): entry localRank of `visible` when it
/// lists several, GPU localRank when it is empty; nullopt when the
/// launcher gave the process its GPU already (a single entry). Throws
/// std::runtime_error when the list is too short for localRank.
std::optional<std::string> gpuForLaunchedWorker(int localRank,
                                                const std::string &visible);

/// Where rank 0's store listens for `masterAddr`: only on the loopback
/// interface when the job is one machine's (127.x, localhost), else on every
/// interface so other nodes reach it.
std::string storeBindAddress(const std::string &masterAddr);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_WORKER_H
