"""presets.py -- the device presets of gen_platform.py (--preset NAME).

Each entry: a title (and an optional note for the header comment), a device
name without the server size (the title instead when --npus-per-node differs
from the preset's server), then for every figure its value and a ..._src
string citing a public source (or saying "assumption"), which gen_platform.py
writes as an XML comment next to the property; optional properties are given
only with a cited figure, else their ..._note says why
(docs/platform-format.md, "Adding a device").  Standard library only;
imported by gen_platform.py from this folder.
"""

# Device presets.  Every figure carries its public source; "assumption" marks
# the few that have no vendor figure and are order-of-magnitude choices.
# GB are decimal as marketed (64 GB -> 64e9 B): the true capacity is GiB, and
# the ~7% difference stands in for memory the runtime reserves.
PRESETS = {
    "910b": {
        "title": "Ascend 910B-class NPUs in Atlas 800T A2-class servers (8 NPUs per server)",
        "device": "Ascend 910B-class NPUs",
        "speed_flops": 313e12,
        "speed_src": "dense FP16/BF16 peak quoted for the Ascend 910B (910B3 bin) "
        "in public comparisons; cross-check: Huawei CANN platform_config for 910B2 "
        "gives 24 cube cores x 1.8 GHz x 16^3 MAC x 2 = 353.9 TFLOPS "
        "(gitcode.com/cann/ops-transformer issue 5487), 910B3 is the lower bin",
        "hbm_bytes": 64e9,
        "hbm_src": "64 GB HBM2e (ai.gitee.com/docs/compute/clusters_gpu/ascend_gpu; "
        "gitcode.com/cann/ops-transformer issue 5487: Atlas A2 memory 64 GB)",
        "hbm_bandwidth_Bps": 1.6e12,
        "hbm_bw_src": "1.6 TB/s (gitcode.com/cann/ops-transformer issue 5487: Atlas A2 1.6TB/s)",
        "npus_per_node": 8,
        "node_src": "8 NPUs per server, HCCS full mesh (ai.gitee.com Ascend 910B doc: "
        "'single machine 8-card full interconnect')",
        "scaleup_bandwidth_Bps": 196e9,
        "scaleup_src": "HCCS: 7 links x 56 GB/s = 392 GB/s per NPU as commonly quoted "
        "for the 910B, counted both directions -> 196 GB/s per direction "
        "(no primary Huawei datasheet found)",
        "scaleup_latency_s": 2e-6,
        "scaleup_lat_src": "assumption: a few microseconds per HCCS transfer",
        "nic_Bps": 25e9,
        "nic_src": "one 200 GE RoCE v2 port per NPU (200 Gb/s = 25e9 B/s), "
        "Atlas 800T A2 8 x 200GE",
        "link_latency_s": 1e-6,
        "link_lat_src": "assumption: 1 us per link (NIC + Ethernet switch port); "
        "same-leaf route 2 us, cross-spine route 4 us",
        "matmul_efficiency": 0.7,
        "eff_src": "assumption: large-GEMM fraction of peak",
        "kernel_launch_s": 10e-6,
        "launch_src": "assumption: per-operator dispatch overhead of CANN",
        # Optional properties: none has a public figure for this device.
        "gemm_table_note": "no public per-shape GEMM figure for the 910B: every GEMM "
        "at matmul_efficiency",
        "attention_note": "no public fused-attention efficiency figure for the 910B: "
        "FlashAttention at matmul_efficiency",
        "fusion_note": "not given (no fusion): no public statement of which "
        "elementwise fusions the 910B software stack applies by default",
        "bus_note": "not given (1): no public HCCL bus-bandwidth figure for the 910B "
        "scale-up fabric",
        "hbm_eff_note": "not given (1): no measured HBM bandwidth of a memory-bound kernel "
        "on the 910B found",
        "fp8_note": "not given: no FP8 figure for the Ascend 910B in the sources used; a workload "
        "with training.fp8_format is refused",
    },
    "910": {
        "title": "Ascend 910 NPUs (not 910B), 8 per Atlas 800 training server (model 9000)",
        "device": "Ascend 910 NPUs (not 910B)",
        "note": "The cluster CodeGeeX 13B was trained on: 1,536 Ascend 910 AI Processors "
        "(32GB) (Zheng et al. 2023, CodeGeeX, arXiv:2303.17568).  Host speed is the FP16 "
        "peak: the 910 has no BF16.",
        "speed_flops": 256e12,
        "speed_src": "256 TFLOPS FP16 dense peak: Huawei's Ascend 910 launch (23 Aug 2019, '256 "
        "TeraFLOPS for half-precision (FP16)'), the Hot Chips 31 (2019) DaVinci talk (H. Liao, "
        "'DaVinci: A Scalable Architecture for Neural Network Computing': 32 DaVinci cores x 4096 "
        "FP16 MACs per cycle) and Liao et al., 'Ascend: a Scalable and Unified Architecture for "
        "Ubiquitous Deep Neural Network Computing', HPCA 2021 (doi:10.1109/HPCA51647.2021.00071)",
        "hbm_bytes": 32e9,
        "hbm_src": "32 GB HBM2 in four stacks (Linley Microprocessor Report, 'Huawei Delivers "
        "Powerful AI Training', 8 Oct 2019: 'Including 32GB of HBM2'; CodeGeeX, "
        "arXiv:2303.17568: 'Ascend 910 AI Processors (32GB)')",
        "hbm_bandwidth_Bps": 1.2e12,
        "hbm_bw_src": "1.2 TB/s HBM2 (Liao et al., HPCA 2021, Ascend 910)",
        "npus_per_node": 8,
        "node_src": "8 Ascend 910 per Atlas 800 training server (model 9000), two HCCS groups "
        "of 4 fully connected NPUs joined by PCIe (hiascend.com MindCluster scheduling guide, "
        "dl_affinity_0002: 'Four Ascend AI processors are interconnected through HCCS, and "
        "Ascend AI processors in HCCS rings are interconnected through PCIe')",
        "scaleup_bandwidth_Bps": 30e9,
        "scaleup_src": "HCCS: 3 ports of 240 Gb/s per Ascend 910 (Hot Chips 31 DaVinci talk), "
        "one to each peer of its group of 4 -> 30 GB/s per direction between two NPUs; a ring "
        "over all 8 also crosses PCIe 4.0 x16 between the groups (~32 GB/s per direction), so "
        "one figure of 30e9 B/s stands for the whole server",
        "scaleup_latency_s": 2e-6,
        "scaleup_lat_src": "assumption: a few microseconds per HCCS transfer (as the 910b preset)",
        "nic_Bps": 12.5e9,
        "nic_src": "one 100 GE RoCE v2 port per NPU (100 Gb/s = 12.5e9 B/s): the Ascend 910 "
        "integrates RoCE v2 (2 x 100 Gb/s on the Hot Chips 31 slide) and the Atlas 800 "
        "training server (model 9000) brings out 8 x 100GE, one per NPU",
        "link_latency_s": 1e-6,
        "link_lat_src": "assumption: 1 us per link (NIC + Ethernet switch port); same-leaf "
        "route 2 us, cross-spine route 4 us (as the 910b preset)",
        "matmul_efficiency": 0.7,
        "eff_src": "assumption: large-GEMM fraction of peak (as the 910b preset)",
        "kernel_launch_s": 10e-6,
        "launch_src": "assumption: per-operator dispatch overhead of CANN (as the 910b preset)",
        "gemm_table_note": "no public per-shape GEMM figure for the 910: all at matmul_efficiency",
        "attention_note": "no public fused-attention figure for the 910: at matmul_efficiency",
        "fusion_note": "not given (no fusion): no public statement for the 910 software stack",
        "bus_note": "not given (1): no public HCCL bus-bandwidth figure for the 910",
        "hbm_eff_note": "not given (1): no measured HBM bandwidth of a memory-bound kernel "
        "on the 910 found",
        "fp8_note": "not given: the Ascend 910 has no FP8 unit in the sources used; a workload with "
        "training.fp8_format is refused",
    },
    "a100": {
        "title": "NVIDIA DGX A100 (8 x A100 SXM4 80GB per node)",
        "device": "NVIDIA A100 SXM4 80GB GPUs",
        "speed_flops": 312e12,
        "speed_src": "312 TFLOPS dense BF16 Tensor Core (NVIDIA A100 datasheet)",
        "hbm_bytes": 80e9,
        "hbm_src": "80 GB HBM2e (NVIDIA A100 80GB datasheet)",
        "hbm_bandwidth_Bps": 2.039e12,
        "hbm_bw_src": "2,039 GB/s (NVIDIA A100 80GB SXM datasheet)",
        "npus_per_node": 8,
        "node_src": "8 GPUs per DGX A100, NVSwitch (NVIDIA DGX A100 datasheet)",
        "scaleup_bandwidth_Bps": 300e9,
        "scaleup_src": "NVLink 3: 600 GB/s per GPU both directions = 300 GB/s per "
        "direction (NVIDIA A100 datasheet)",
        "scaleup_latency_s": 1e-6,
        "scaleup_lat_src": "assumption: about 1 us per NVLink transfer",
        "nic_Bps": 25e9,
        "nic_src": "8 x 200 Gb/s HDR InfiniBand per DGX A100 = one 25e9 B/s NIC "
        "per GPU (NVIDIA DGX A100 datasheet)",
        "link_latency_s": 0.5e-6,
        "link_lat_src": "assumption: 0.5 us per link (HCA + ~130 ns IB switch); "
        "same-leaf route 1 us, cross-spine route 2 us",
        "matmul_efficiency": 0.6777,
        "eff_src": "calibrated on ONE measurement (tests/validation/validate.py --calibrate a100, "
        "docs/validation.md): the value for which npusim reproduces Korthikanti et al. 2022 "
        "(arXiv:2205.05198) Table 5, GPT-3 175B, full recompute, TP 8 PP 8 (3 chunks), 64 GPUs, "
        "global batch 64, sequence 2048: 18.13 s per iteration; it stands for everything the "
        "roofline leaves out, not for a large GEMM alone",
        "kernel_launch_s": 5e-6,
        "launch_src": "assumption: CUDA kernel launch overhead",
        "gemm_table_note": "no per-shape figure with a citable number: every GEMM at "
        "matmul_efficiency",
        "attention_efficiency": 0.73,
        "attention_src": "FlashAttention-2 forward reaches up to 230 TFLOPS on A100, "
        "73% of 312 (Dao 2023, FlashAttention-2, arXiv:2307.08691: 50-73% of peak "
        "depending on head size and masking); the backward reaches less, so one "
        "number is optimistic for it",
        "elementwise_fusion": 1,
        "fusion_src": "Megatron-LM fuses bias+dropout+add on NVIDIA GPUs by default "
        "(args.bias_dropout_fusion, true unless the no-bias-dropout-fusion flag is given)",
        "collective_bus_efficiency": 0.68,
        "bus_src": "NCCL all-reduce bus bandwidth that users measured and reported on 8 x A100 "
        "SXM4 80GB over NVSwitch: "
        "~200 GB/s (github.com/NVIDIA/nccl-tests/issues/149) and 208 GB/s (issues/178) of the "
        "300 GB/s per direction, 0.667 and 0.693: their mean",
        "hbm_efficiency": 0.88,
        "hbm_eff_src": "a read kernel measured at 1.80 of the datasheet's 2.04 TB/s on an A100 "
        "80GB SXM, 88%, Nsight Compute agreeing (forums.developer.nvidia.com, 'Trouble to "
        "reach peak bandwidth of A100', thread 339083); the best a kernel reaches, so "
        "optimistic for framework kernels",
        "fp8_note": "not given: the A100 (Ampere) has no FP8 Tensor Cores (NVIDIA A100 datasheet "
        "lists TF32, BF16, FP16, INT8); a workload with training.fp8_format is refused",
    },
    "h100": {
        "title": "NVIDIA H100 SXM5 80GB, 8 per node (DGX H100-class)",
        "device": "NVIDIA H100 SXM5 80GB GPUs",
        "speed_flops": 989e12,
        "speed_src": "989 TFLOPS dense BF16 Tensor Core (NVIDIA H100 SXM datasheet: "
        "1,979 TFLOPS with sparsity)",
        "hbm_bytes": 80e9,
        "hbm_src": "80 GB HBM3 (NVIDIA H100 SXM datasheet)",
        "hbm_bandwidth_Bps": 3.35e12,
        "hbm_bw_src": "3.35 TB/s (NVIDIA H100 SXM datasheet)",
        "npus_per_node": 8,
        "node_src": "8 GPUs per DGX H100, NVSwitch (NVIDIA DGX H100 datasheet)",
        "scaleup_bandwidth_Bps": 450e9,
        "scaleup_src": "NVLink 4: 900 GB/s per GPU both directions = 450 GB/s per "
        "direction (NVIDIA H100 SXM datasheet)",
        "scaleup_latency_s": 1e-6,
        "scaleup_lat_src": "assumption: about 1 us per NVLink transfer",
        "nic_Bps": 50e9,
        "nic_src": "one 400 Gb/s NDR InfiniBand ConnectX-7 per GPU = 50e9 B/s "
        "(NVIDIA DGX H100 datasheet)",
        "link_latency_s": 0.5e-6,
        "link_lat_src": "assumption: 0.5 us per link (HCA + IB switch); "
        "same-leaf route 1 us, cross-spine route 2 us",
        "matmul_efficiency": 0.5805,
        "eff_src": "calibrated on ONE measurement (tests/validation/validate.py --calibrate h100, "
        "docs/validation.md): the value for which npusim reproduces NVIDIA's DGX Cloud recipe "
        "(github.com/NVIDIA/dgxc-benchmarking nemo_megatron/README_175b.md) GPT-3 175B BF16, "
        "TP 4 PP 8 VP 12, 128 H100, global batch 256, run with the recipe's Transformer Engine "
        "tensor-parallel overlap, overlap_p2p_comm, 220 MB gradient buckets and bf16 gradient "
        "reduction (grad_sync_dtype): 8.309 s per step; "
        "it stands for "
        "everything the roofline leaves out, not for a large GEMM alone",
        "kernel_launch_s": 5e-6,
        "launch_src": "assumption: CUDA kernel launch overhead",
        "gemm_table_note": "no per-shape figure with a citable number: every GEMM at "
        "matmul_efficiency",
        "attention_note": "not given: FlashAttention at matmul_efficiency (the calibrated "
        "value); FlashAttention-3's forward reaches 740 TFLOPS FP16 on H100, 75% (Shah et al. "
        "2024, arXiv:2407.08608), but no backward utilisation figure was found",
        "elementwise_fusion": 1,
        "fusion_src": "Megatron-LM fuses bias+dropout+add on NVIDIA GPUs by default "
        "(args.bias_dropout_fusion, true unless the no-bias-dropout-fusion flag is given)",
        "collective_bus_efficiency": 0.82,
        "bus_src": "NCCL ring collectives on H100 NVLink: 370 of 450 GB/s line rate, "
        "NCCL's maintainer in github.com/NVIDIA/nccl-tests/issues/212 (NVLink SHARP "
        "all-reduce goes higher; the model prices rings)",
        "hbm_efficiency": 0.897,
        "hbm_eff_src": "softmax measured at 3.01 of 3.35 TB/s on H100 SXM 80GB, and about 3 TB/s "
        "for RMSNorm, softmax and cross-entropy rows longer than 4K (Guo, Zadouri, Dao 2025, "
        "'Getting Memory-bound Kernels to Speed-of-Light', github.com/Dao-AILab/quack "
        "media/2025-07-10-membound-sol.md); hand-tuned kernels, so optimistic for framework "
        "ones",
        "fp8_flops": 1979e12,
        "fp8_src": "1,979 TFLOPS dense FP8 Tensor Core (NVIDIA H100 SXM datasheet: 3,958 with "
        "sparsity)",
    },
    "gb200": {
        "title": "NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain",
        "device": "NVIDIA GB200 (Blackwell) GPUs",
        "note": "Scale-up domain of 72 GPUs (npus_per_node 72): the NVL72 rack's NVLink switch "
        "trays join all 72 GPUs at full NVLink bandwidth (NVIDIA GB200 NVL72 product page).",
        "speed_flops": 2.5e15,
        "speed_src": "2.5 PFLOPS dense FP16/BF16 per GPU: NVIDIA GB200 NVL72 specifications, "
        "360 PFLOPS FP16/BF16 for 72 GPUs with sparsity, halved for dense",
        "hbm_bytes": 186e9,
        "hbm_src": "13.4 TB HBM3e per 72 GPUs = 186 GB per GPU (NVIDIA GB200 NVL72 specifications)",
        "hbm_bandwidth_Bps": 8e12,
        "hbm_bw_src": "576 TB/s per 72 GPUs = 8 TB/s per GPU (NVIDIA GB200 NVL72 specifications)",
        "npus_per_node": 72,
        "node_src": "72 GPUs per NVLink domain (NVIDIA GB200 NVL72)",
        "scaleup_bandwidth_Bps": 900e9,
        "scaleup_src": "NVLink 5: 130 TB/s per 72 GPUs = 1.8 TB/s per GPU both directions, "
        "900 GB/s per direction (NVIDIA GB200 NVL72 specifications)",
        "scaleup_latency_s": 1e-6,
        "scaleup_lat_src": "assumption: about 1 us per NVLink transfer (as the h100 preset)",
        "nic_Bps": 50e9,
        "nic_src": "one 400 Gb/s ConnectX-7 per GPU = 50e9 B/s (NVIDIA DGX GB200 SuperPOD "
        "reference architecture: 72 ConnectX-7 per rack)",
        "link_latency_s": 0.5e-6,
        "link_lat_src": "assumption: 0.5 us per link (HCA + IB switch), as the h100 preset",
        "matmul_efficiency": 0.7,
        "eff_src": "assumption: large-GEMM fraction of peak (no calibration run for GB200)",
        "kernel_launch_s": 5e-6,
        "launch_src": "assumption: CUDA kernel launch overhead (as the h100 preset)",
        "gemm_table_note": "no per-shape figure with a citable number: every GEMM at "
        "matmul_efficiency",
        "attention_note": "no fused-attention efficiency figure for Blackwell found: "
        "FlashAttention at matmul_efficiency",
        "elementwise_fusion": 1,
        "fusion_src": "Megatron-LM fuses bias+dropout+add on NVIDIA GPUs by default "
        "(args.bias_dropout_fusion, true unless the no-bias-dropout-fusion flag is given)",
        "bus_note": "not given (1): no published NCCL bus-bandwidth figure for NVLink 5 found",
        "hbm_eff_note": "not given (1): no measured HBM bandwidth of a memory-bound kernel "
        "on GB200 found",
        "fp8_flops": 5e15,
        "fp8_src": "5 PFLOPS dense FP8 per GPU: NVIDIA GB200 NVL72 specifications, 720 PFLOPS "
        "FP8 for 72 GPUs with sparsity, halved for dense",
    },
}
