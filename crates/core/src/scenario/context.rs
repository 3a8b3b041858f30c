//! The CUDA context per stack: the driver's memory outside the caching allocator, as data.

use super::*;

/// One measured (or rule-of-thumb) CUDA context: which stack it holds for, its size, and
/// where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaContext {
    /// The context per GPU, MiB.
    pub mib: u32,
    /// Which stack the figure is for, and its source.
    pub source: &'static str,
}

/// PyTorch eager on Hopper: measured.
const PYTORCH_HOPPER: CudaContext = CudaContext {
    mib: 685,
    source: "measured 718,077,952 B = 685 MiB (total − free − reserved after initialisation) with torch 2.11.0+cu130 on an H200 and an H100 SXM alike, tests/data/cuda_h200/env.jsonl, tests/data/cuda_h100/env.jsonl; applied to the Hopper presets",
};

/// Every other stack: the rule of thumb the serving engines' start-up logs were matched with.
const RULE_OF_THUMB: CudaContext = CudaContext {
    mib: 600,
    source: "rule of thumb: CUDA 12 on Hopper reported at 500–700 MiB (PyTorch notes: Understanding CUDA Memory Usage); the serving engines' start-up logs were matched with 600",
};

impl Scenario {
    /// The CUDA context per GPU: `cuda_ctx` where given, else the figure measured for this
    /// stack, else the rule of thumb.
    ///
    /// # Formula
    /// ```text
    /// C = cuda_ctx                                    (MiB, where given)
    ///   = 685  framework=pytorch on a Hopper preset   (measured: total − free − reserved
    ///                                                  after initialisation, 718,077,952 B)
    ///   = 600  otherwise                              (rule of thumb, 500–700 MiB reported)
    /// ```
    /// Source: `tests/data/cuda_h200/env.jsonl` (torch 2.11.0+cu130, H200); PyTorch notes,
    /// "Understanding CUDA Memory Usage". Example: `framework=pytorch&gpu=h200` → 685 MiB =
    /// 718,274,560 B (196,608 B above the measured context, the MiB rounding);
    /// `framework=megatron&gpu=h200` → 600 MiB.
    pub fn cuda_context(&self) -> CudaContext {
        if let Some(mib) = self.runtime.cuda_ctx_mib {
            return CudaContext {
                mib,
                source: "cuda_ctx as given",
            };
        }
        let hopper = crate::gpu::compute_capability(self.gpu().id) == 90;
        match (self.stack.framework, hopper) {
            (Framework::Pytorch, true) => PYTORCH_HOPPER,
            _ => RULE_OF_THUMB,
        }
    }

    /// [`Scenario::cuda_context`] in MiB.
    pub fn cuda_ctx_mib(&self) -> u32 {
        self.cuda_context().mib
    }

    /// The memory CUDA itself reports for the device (`cudaMemGetInfo`'s total), B: below the
    /// capacity `nvidia-smi` shows by what the driver keeps. Measured on the two presets the
    /// project ran on; elsewhere (or with `gpu_mem` given) the capacity [`Scenario::usable_bytes`].
    ///
    /// # Formula
    /// ```text
    /// T = 85,017,493,504 B   h100-80 (79.18 GiB; nvidia-smi 81,559 MiB = 79.65 GiB)
    ///   = 150,109,880,320 B  h200    (139.80 GiB; nvidia-smi 140.40 GiB)
    ///   = usable_bytes        otherwise
    /// ```
    /// Source: `tests/data/cuda_h100/env.jsonl`, `tests/data/cuda_h200/env.jsonl` (`total`,
    /// torch 2.11.0+cu130). Example: `gpu=h100-80` → 85,017,493,504 B, 503,316,480 B (480 MiB)
    /// under the preset's 85,520,809,984.
    pub fn cuda_total_bytes(&self) -> u64 {
        if self.cluster.gpu_mem_mib.is_some() {
            return self.usable_bytes();
        }
        match self.gpu().id {
            "h100-80" => 85_017_493_504,
            "h200" => 150_109_880_320,
            _ => self.usable_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::contract::query::decode;

    fn ctx(q: &str) -> u32 {
        decode(q).0.scenario.cuda_ctx_mib()
    }

    #[test]
    fn the_context_follows_the_stack() {
        // 718,077,952 B measured (env.jsonl) = 684.8 MiB, written as 685.
        assert_eq!((718_077_952f64 / (1u64 << 20) as f64).round() as u32, 685);
        assert_eq!(ctx("framework=pytorch&gpu=h200"), 685);
        assert_eq!(ctx("framework=pytorch&gpu=h100-80"), 685);
        assert_eq!(ctx("framework=pytorch&gpu=a100-80"), 600);
        assert_eq!(ctx("framework=megatron&gpu=h200"), 600);
        assert_eq!(ctx("mode=serve&engine=vllm&gpu=h200"), 600);
        assert_eq!(ctx("framework=pytorch&gpu=h200&cuda_ctx=0"), 0);
        assert_eq!(ctx("framework=megatron&cuda_ctx=512"), 512);
    }
}
