//! The names of what an event allocates or frees, by component and moment.

use super::*;

pub(crate) fn resident_what(c: Component) -> &'static str {
    match c {
        Component::Weights => "resident weights",
        Component::Gradients => "resident gradient buffer",
        Component::MasterWeights => "resident fp32 master weights",
        Component::OptimizerStates => "resident optimizer states",
        Component::ModelStates => "resident model states",
        Component::Overhead => "CUDA context / NCCL",
        Component::Fragmentation => "allocator fragmentation",
        Component::CommBuffers => "communication buffers",
        _ => "resident",
    }
}

pub(crate) fn passes_what(c: Component) -> &'static str {
    match c {
        Component::Weights => "autocast's bf16 weight copies",
        Component::CommBuffers => "prefetch / ring buffers for the passes",
        _ => "held through forward and backward",
    }
}

pub(crate) fn per_backward_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "gradient reduce bucket",
        Component::GatheredLayer => "unsharded gradient block before reduce-scatter",
        _ => "held during the backward",
    }
}

pub(crate) fn to_step_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "DDP gradient buckets",
        Component::GatheredLayer => "unsharded gradients accumulated over micro-batches",
        _ => "held from backward to the step",
    }
}

pub(crate) fn step_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "all-gather bucket for the updated parameters",
        Component::Workspace => "optimizer temporaries (foreach)",
        _ => "optimizer step",
    }
}
