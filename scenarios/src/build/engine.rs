//! The engine configuration: packet format, buffers, latencies, crossbar, the base fabric's
//! transport and the route-memory check.

use super::{DEFAULT_ETHERNET_RTO, DEFAULT_MEMORY_LIMIT, Loaded, MAX_DEVICE_LATENCY, nvlink_gen, pcie_gen};
use crate::diag::ScenarioError;
use crate::schema::{
    BufferSpec, EthernetSpec, FabricKind, LossRecovery, RoutingSpec, ServerKindSpec, StripingSpec, TopologySpec,
};
use crate::units::TimeSpec;
use fabrics::engine::{
    Crossbar, DEFAULT_PORT_BUFFER_BYTES, DEFAULT_SWITCH_LATENCY, ETHERNET_ROCE_HEADER_BYTES, EngineConfig, GbnWindow,
    MAX_MTU_BYTES, RoceConfig, RoutePick, Striping, XbarArbitration,
};
use fabrics::ib;
use fabrics::models::{AnyBuffer, AnyFlowControl, AnyMarking, PerPortTailDrop};
use fabrics::nvlink::NvLinkGen;
use fabrics::pcie::PcieGen;
use fabrics::roce::RoceFrame;
use fabrics::routing::Destinations;
use fabrics::topology::Topology;
use sim_core::Duration;

impl Loaded {
    pub(super) fn build_engine(&self) -> Result<EngineConfig, ScenarioError> {
        let f = &self.scenario.fabric;
        if matches!(f.kind, FabricKind::Nvlink | FabricKind::Pcie) {
            return self.build_gpu_engine();
        }
        let ib_kind = f.kind == FabricKind::Infiniband;
        let mtu = f.mtu.get().get();
        if mtu == 0 || mtu > MAX_MTU_BYTES as u64 {
            return Err(self.err("fabric.mtu", format!("expected 1B..={MAX_MTU_BYTES}B, got {mtu}B")));
        }
        if ib_kind && !ib::link::MTUS_BYTES.contains(&(mtu as u32)) {
            return Err(self.err(
                "fabric.mtu",
                format!("an InfiniBand MTU is one of 256B, 512B, 1KiB, 2KiB, 4KiB; got {mtu}B"),
            ));
        }
        if !ib_kind && f.infiniband.is_some() {
            return Err(self.err("fabric.infiniband", "[fabric.infiniband] needs kind = \"infiniband\""));
        }
        let roce_kind = f.kind == FabricKind::Rocev2;
        if !roce_kind && f.roce.is_some() {
            return Err(self.err("fabric.roce", "[fabric.roce] needs kind = \"rocev2\""));
        }
        if roce_kind && f.buffer.is_some() {
            return Err(self.err(
                "fabric.buffer",
                "RoCEv2 switches have a shared buffer: set [fabric.roce] buffer instead",
            ));
        }
        let grh = f.infiniband.as_ref().is_some_and(|i| i.grh);
        let header = match f.header {
            Some(h) => h.get().get(),
            None if ib_kind => ib::link::header_bytes(grh) as u64,
            None if roce_kind => RoceFrame::data(self.roce_version()?).header_bytes() as u64,
            None => ETHERNET_ROCE_HEADER_BYTES as u64,
        };
        if header > 1024 {
            return Err(self.err(
                "fabric.header",
                format!("expected at most 1024B of header, got {header}B"),
            ));
        }
        let switch_latency = match f.switch_latency {
            Some(l) => l.get(),
            None if ib_kind => ib::DEFAULT_IB_SWITCH_LATENCY,
            None => DEFAULT_SWITCH_LATENCY,
        };
        if switch_latency > Duration::from_ms(1) {
            return Err(self.err(
                "fabric.switch_latency",
                format!("expected at most 1ms, got {switch_latency}"),
            ));
        }
        let (device_latency, host_latency) = self.latencies()?;
        let buffer = match &f.buffer {
            Some(_) if ib_kind => {
                return Err(self.err(
                    "fabric.buffer",
                    "InfiniBand switches have per-VL input buffers: set [fabric.infiniband] vl_buffer instead",
                ));
            }
            None => AnyBuffer::PerPortTailDrop(PerPortTailDrop {
                buffer_bytes: DEFAULT_PORT_BUFFER_BYTES,
            }),
            Some(BufferSpec::PerPortTailDrop { size }) => {
                let b = size.get().get();
                if b < mtu + header {
                    return Err(self.err(
                        "fabric.buffer.size",
                        format!(
                            "a port buffer must hold at least one packet ({}B), got {b}B",
                            mtu + header
                        ),
                    ));
                }
                AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: b })
            }
        };
        let route_pick = match f.routing {
            RoutingSpec::Ecmp | RoutingSpec::Updown => RoutePick::Ecmp,
            RoutingSpec::Dmodk => RoutePick::DModK,
            RoutingSpec::Adaptive => RoutePick::Adaptive,
        };
        let ethernet_kind = f.kind == FabricKind::Ethernet;
        let ib_links = matches!(&self.scenario.topology, TopologySpec::Custom { links, .. }
            if links.iter().any(|l| l.kind.as_deref() == Some("infiniband")));
        if roce_kind && ib_links && mtu > ib::link::MTUS_BYTES[ib::link::MTUS_BYTES.len() - 1] as u64 {
            return Err(self.err(
                "fabric.mtu",
                format!(
                    "the topology has infiniband links, whose MTU is at most 4096B: expected at most 4096B, got {mtu}B"
                ),
            ));
        }
        let ib = if ib_kind {
            Some(self.build_ib(f.infiniband.as_ref(), (mtu + header) as u32)?)
        } else if (roce_kind || ethernet_kind)
            && (matches!(self.scenario.topology, TopologySpec::Cluster { .. })
                || ib_links
                || matches!(&self.scenario.topology, TopologySpec::Custom { devices, .. } if !devices.is_empty()))
        {
            // The servers of a RoCEv2 or Ethernet cluster keep their credit-based NVLink/PCIe
            // links and cut-through devices, and a custom topology's InfiniBand switches their
            // credits; only the Ethernet network runs PFC, or nothing (`fabrics::engine::Device`).
            Some(ib::IbConfig::server_layer())
        } else {
            None
        };
        if !ethernet_kind && f.ethernet.is_some() {
            return Err(self.err("fabric.ethernet", "[fabric.ethernet] needs kind = \"ethernet\""));
        }
        let roce = if roce_kind {
            Some(self.build_roce(f.roce.as_ref(), (mtu + header) as u32)?)
        } else if ethernet_kind {
            self.ethernet_transport((mtu + header) as u32)?
        } else {
            None
        };
        Ok(EngineConfig {
            mtu_bytes: mtu as u32,
            header_bytes: header as u32,
            switch_latency,
            sender_rate: f.sender_rate.map(|r| r.get()),
            buffer,
            flow_control: AnyFlowControl::None,
            marking: AnyMarking::None,
            seed: self.scenario.scenario.seed,
            route_pick,
            lossy_network: ethernet_kind && (ib.is_some() || roce.is_some()),
            ib,
            roce,
            device_latency,
            host_latency,
            crossbar: self.crossbar()?,
        })
    }

    /// Refuses, before anything is allocated for them, route tables larger than
    /// `run.memory_limit` (issue 14/15: `validate` of 4,096 HGX servers tried to allocate 15 GB
    /// and aborted). The tables hold one 4-B group id per (forwarding node, leaf switch that
    /// `dests` reach) (`fabrics::routing::Routes`), and building them takes one BFS per leaf.
    pub(super) fn check_route_memory(&self, topo: &Topology, dests: Destinations) -> Result<(), ScenarioError> {
        let limit = self
            .scenario
            .run
            .memory_limit
            .map_or(DEFAULT_MEMORY_LIMIT, |s| s.get().get());
        let rows = (topo.n_nodes() - topo.n_hosts()) as u64;
        let leaves = dests.n_leaves(topo) as u64;
        let bytes = rows.saturating_mul(leaves).saturating_mul(4);
        if bytes <= limit {
            return Ok(());
        }
        let field = if self.scenario.run.memory_limit.is_some() {
            "run.memory_limit"
        } else {
            "topology"
        };
        Err(self.err(
            field,
            format!(
                "the route tables of this fabric would take about {} ({rows} forwarding nodes x {leaves} leaf switches the flows reach \
                 x 4 B), more than run.memory_limit = {}: use a smaller topology or raise run.memory_limit",
                format_args!("{:.1}GiB", bytes as f64 / (1u64 << 30) as f64),
                crate::units::SizeSpec::new(sim_core::Bytes(limit)),
            ),
        ))
    }

    /// A go-back-N retransmission timeout at `{table}.go_back_n_timeout`, range-checked.
    pub(super) fn go_back_n_timeout(
        &self,
        t: Option<TimeSpec>,
        table: &str,
    ) -> Result<Option<Duration>, ScenarioError> {
        match t {
            Some(t) if t.get() == Duration::ZERO || t.get() > Duration::from_ms(1000) => {
                Err(self.err(&format!("{table}.go_back_n_timeout"), "expected a timeout in (0, 1s]"))
            }
            t => Ok(t.map(|t| t.get())),
        }
    }

    /// A go-back-N send window (`"bdp"`, `"unlimited"` or a size) at `{table}.go_back_n_window`.
    pub(super) fn go_back_n_window(&self, w: &str, table: &str) -> Result<GbnWindow, ScenarioError> {
        Ok(match w.trim() {
            "bdp" => GbnWindow::Bdp,
            "unlimited" => GbnWindow::Unlimited,
            other => match other.parse::<crate::units::SizeSpec>() {
                Ok(b) if b.get().get() > 0 => GbnWindow::Bytes(b.get().get()),
                _ => {
                    return Err(self.err(
                        &format!("{table}.go_back_n_window"),
                        format!("expected \"bdp\", \"unlimited\" or a size > 0 such as \"64KiB\", got {other:?}"),
                    ));
                }
            },
        })
    }

    /// The base fabric's transport (`[fabric.ethernet]`): RoCEv2 queue pairs with every
    /// priority lossy, no congestion control, ACK per packet and go-back-N, or `None` with
    /// `loss_recovery = "none"` (`docs/models/ethernet-base.md`).
    fn ethernet_transport(&self, max_wire: u32) -> Result<Option<RoceConfig>, ScenarioError> {
        let default_spec = EthernetSpec::default();
        let spec = self.scenario.fabric.ethernet.as_ref().unwrap_or(&default_spec);
        if spec.loss_recovery == Some(LossRecovery::None) {
            let set = [
                ("go_back_n_timeout", spec.go_back_n_timeout.is_some()),
                ("go_back_n_window", spec.go_back_n_window.is_some()),
            ];
            if let Some((key, _)) = set.iter().find(|(_, set)| *set) {
                return Err(self.err(
                    &format!("fabric.ethernet.{key}"),
                    "go-back-N is off (loss_recovery = \"none\"): remove this key or set loss_recovery = \"go_back_n\"",
                ));
            }
            return Ok(None);
        }
        let timeout = self.go_back_n_timeout(spec.go_back_n_timeout, "fabric.ethernet")?;
        let gbn_window = match &spec.go_back_n_window {
            Some(w) => self.go_back_n_window(w, "fabric.ethernet")?,
            None => GbnWindow::Bdp,
        };
        let c = RoceConfig {
            lossless_mask: 0,
            lossy_mask: u8::MAX,
            strict_mask: 0,
            dwrr_quantum_bytes: [max_wire; 8],
            go_back_n: Some(timeout.unwrap_or(DEFAULT_ETHERNET_RTO)),
            gbn_window,
            deadlock_detection: false,
            ..RoceConfig::default()
        };
        c.validate(max_wire).map_err(|m| self.err("fabric.ethernet", m))?;
        Ok(Some(c))
    }

    /// `kind = "nvlink"` / `"pcie"`: the link layer fixes the packet format and credits.
    fn build_gpu_engine(&self) -> Result<EngineConfig, ScenarioError> {
        let f = &self.scenario.fabric;
        if f.mtu.get().get() != fabrics::engine::DEFAULT_MTU_BYTES as u64 || f.header.is_some() {
            return Err(self.err(
                "fabric.mtu",
                "NVLink and PCIe fabrics take their packet format from the link layer (256-B NVLink packets + 16-B header flit; MPS + TLP overhead): remove `mtu` and `header`",
            ));
        }
        if f.infiniband.is_some() || f.buffer.is_some() {
            return Err(self.err(
                "fabric",
                "[fabric.infiniband] and [fabric.buffer] do not apply to NVLink/PCIe fabrics",
            ));
        }
        let mut cfg = match f.kind {
            FabricKind::Pcie => {
                let link = self
                    .pcie_link()
                    .ok_or_else(|| self.err("fabric.kind", "a pcie fabric needs a pcie_server topology"))?;
                EngineConfig::pcie(&link)
            }
            _ => EngineConfig::nvlink(),
        };
        (cfg.device_latency, cfg.host_latency) = self.latencies()?;
        if let Some(l) = f.switch_latency {
            if l.get() > Duration::from_ms(1) {
                return Err(self.err(
                    "fabric.switch_latency",
                    format!("expected at most 1ms, got {}", l.get()),
                ));
            }
            let (key, given) = match f.kind {
                FabricKind::Pcie => ("pcie_switch", &mut cfg.device_latency.pcie_switch),
                _ => ("nvswitch", &mut cfg.device_latency.nvswitch),
            };
            let lat = f.latency.as_ref();
            if lat.is_some_and(|t| {
                if key == "pcie_switch" {
                    t.pcie_switch.is_some()
                } else {
                    t.nvswitch.is_some()
                }
            }) {
                return Err(self.err(
                    &format!("fabric.latency.{key}"),
                    format!(
                        "`fabric.switch_latency` already sets the {key} latency of this fabric: give one of the two"
                    ),
                ));
            }
            *given = l.get();
        }
        cfg.sender_rate = f.sender_rate.map(|r| r.get());
        cfg.seed = self.scenario.scenario.seed;
        cfg.route_pick = match f.routing {
            RoutingSpec::Ecmp | RoutingSpec::Updown => RoutePick::Ecmp,
            RoutingSpec::Dmodk => RoutePick::DModK,
            RoutingSpec::Adaptive => RoutePick::Adaptive,
        };
        cfg.crossbar = self.crossbar()?;
        Ok(cfg)
    }

    /// `[fabric.latency]` over the defaults: the devices' latencies and the network adapters'
    /// own processing, each range-checked at its key. Defaults: the PCIe switch of the
    /// servers' PCIe generation ([`PcieGen::switch_latency`]), NIC/HCA processing by the
    /// network's kind ([`fabrics::engine::IB_HCA_LATENCY`] on InfiniBand, NVLink and PCIe
    /// fabrics, [`fabrics::engine::ETHERNET_NIC_LATENCY`] on Ethernet and RoCEv2).
    fn latencies(&self) -> Result<(fabrics::engine::DeviceLatency, fabrics::engine::HostLatency), ScenarioError> {
        use fabrics::engine::{DeviceLatency, ETHERNET_NIC_LATENCY, IB_HCA_LATENCY};
        let kind = self.scenario.fabric.kind;
        let nic = match kind {
            FabricKind::Ethernet | FabricKind::Rocev2 => ETHERNET_NIC_LATENCY,
            _ => IB_HCA_LATENCY,
        };
        let mut d = DeviceLatency {
            nic_tx: nic.tx,
            nic_rx: nic.rx,
            ..DeviceLatency::default()
        };
        if let Some(g) = self.server_pcie_gen() {
            d.pcie_switch = g.switch_latency();
        }
        let spec = self.scenario.fabric.latency.clone().unwrap_or_default();
        if kind == FabricKind::Infiniband && spec.ib_switch.is_some() {
            return Err(self.err(
                "fabric.latency.ib_switch",
                "the switches of an InfiniBand run take `fabric.switch_latency`; `ib_switch` is for InfiniBand switches in a rocev2 run",
            ));
        }
        for (key, value, slot) in [
            ("nic_tx", spec.nic_tx, &mut d.nic_tx),
            ("nic_rx", spec.nic_rx, &mut d.nic_rx),
            ("gpu_hub", spec.gpu_hub, &mut d.gpu_hub),
            ("nvswitch", spec.nvswitch, &mut d.nvswitch),
            ("pcie_switch", spec.pcie_switch, &mut d.pcie_switch),
            ("root_complex", spec.root_complex, &mut d.root_complex),
            ("ib_switch", spec.ib_switch, &mut d.ib_switch),
        ] {
            if let Some(v) = value {
                *slot = self.device_latency_at(key, v)?;
            }
        }
        let (nvlink, pcie) = self.built_link_gens();
        for (key, value, built) in [
            ("nvlink_link", spec.nvlink_link, nvlink.is_some()),
            ("pcie_link", spec.pcie_link, pcie.is_some()),
        ] {
            if let Some(v) = value {
                if !built {
                    return Err(self.err(
                        &format!("fabric.latency.{key}"),
                        format!(
                            "this topology builds no {} links (a custom topology gives each link its own `delay`)",
                            if key == "nvlink_link" { "NVLink" } else { "PCIe" }
                        ),
                    ));
                }
                self.device_latency_at(key, v)?;
            }
        }
        let host = fabrics::engine::HostLatency {
            tx: d.nic_tx,
            rx: d.nic_rx,
        };
        Ok((d, host))
    }

    /// A `[fabric.latency]` value, refused beyond [`MAX_DEVICE_LATENCY`].
    fn device_latency_at(&self, key: &str, v: TimeSpec) -> Result<Duration, ScenarioError> {
        if v.get() > MAX_DEVICE_LATENCY {
            return Err(self.err(
                &format!("fabric.latency.{key}"),
                format!(
                    "expected at most {MAX_DEVICE_LATENCY} (no device or link takes longer), got {}",
                    v.get()
                ),
            ));
        }
        Ok(v.get())
    }

    /// The PCIe generation of the topology's servers, where it has any.
    fn server_pcie_gen(&self) -> Option<PcieGen> {
        self.built_link_gens().1
    }

    /// The NVLink and PCIe generations of the links a GPU topology builder makes (`None` for
    /// the network topologies and for custom ones, whose links carry their own delays).
    pub(super) fn built_link_gens(&self) -> (Option<NvLinkGen>, Option<PcieGen>) {
        match &self.scenario.topology {
            TopologySpec::HgxH100 {} => (Some(NvLinkGen::V4), Some(PcieGen::Gen5)),
            TopologySpec::HgxA100 {} => (Some(NvLinkGen::V3), Some(PcieGen::Gen4)),
            TopologySpec::Nvl72 {} => (Some(NvLinkGen::V5), None),
            TopologySpec::NvlinkMesh { generation, .. } | TopologySpec::NvlinkRing { generation, .. } => {
                (Some(nvlink_gen(*generation)), None)
            }
            TopologySpec::PcieServer { generation, .. } => (None, Some(pcie_gen(*generation))),
            TopologySpec::Cluster { server, .. } => match server {
                ServerKindSpec::HgxH100 => (Some(NvLinkGen::V4), Some(PcieGen::Gen5)),
                ServerKindSpec::HgxA100 => (Some(NvLinkGen::V3), Some(PcieGen::Gen4)),
                ServerKindSpec::PcieGen4 => (None, Some(PcieGen::Gen4)),
                ServerKindSpec::PcieGen5 => (None, Some(PcieGen::Gen5)),
            },
            _ => (None, None),
        }
    }

    /// `[fabric.latency] nvlink_link` / `pcie_link`, the one-way latency of the GPU topologies'
    /// NVLink and PCIe links, when given (the generation's default otherwise).
    pub(super) fn link_latency(&self) -> (Option<Duration>, Option<Duration>) {
        let l = self.scenario.fabric.latency.as_ref();
        (
            l.and_then(|l| l.nvlink_link).map(|t| t.get()),
            l.and_then(|l| l.pcie_link).map(|t| t.get()),
        )
    }

    /// `[fabric.crossbar]` into the engine's [`Crossbar`], range-checked.
    fn crossbar(&self) -> Result<Crossbar, ScenarioError> {
        let mut c = Crossbar::default();
        let Some(spec) = &self.scenario.fabric.crossbar else {
            return Ok(c);
        };
        if let Some(st) = spec.striping {
            c.striping = match st {
                StripingSpec::Interleaved => Striping::Interleaved,
                StripingSpec::LeastLoaded => Striping::LeastLoaded,
            };
        }
        if let Some(x) = spec.speedup {
            let pct = (x * 100.0).round();
            let range = fabrics::engine::CROSSBAR_SPEEDUP_PERCENT_RANGE;
            if !x.is_finite() || pct < *range.start() as f64 || pct > *range.end() as f64 {
                return Err(self.err(
                    "fabric.crossbar.speedup",
                    format!(
                        "expected 1.0..=10.0 (a multiple of the input link rate), got {}",
                        crate::wording::float_text(x)
                    ),
                ));
            }
            c.speedup_percent = Some(pct as u32);
        }
        if let Some(a) = &spec.arbitration {
            c.arbitration = match a.as_str() {
                "oldest" => XbarArbitration::OldestFirst,
                "round_robin" => XbarArbitration::RoundRobin,
                "islip" => XbarArbitration::Islip,
                "lqf" => XbarArbitration::LongestQueueFirst,
                _ => {
                    return Err(self.err(
                        "fabric.crossbar.arbitration",
                        format!("expected \"oldest\", \"round_robin\", \"islip\" or \"lqf\", got {a:?}"),
                    ));
                }
            };
        }
        Ok(c)
    }
}
