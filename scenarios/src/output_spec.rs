//! The checks of `[output]` that its types cannot express, each refused at its key.

use crate::build::Loaded;
use crate::diag::ScenarioError;

impl Loaded {
    /// Refuses `[output]` values out of range (called by [`Loaded::build`]).
    pub(crate) fn check_output(&self) -> Result<(), ScenarioError> {
        let out = &self.scenario.output;
        if let Some(edges) = &out.slowdown_size_edges {
            let bytes: Vec<u64> = edges.iter().map(|e| e.get().get()).collect();
            crate::fct_report::check_edges(&bytes).map_err(|m| self.err("output.slowdown_size_edges", m))?;
        }
        if let Some(t) = out.sample {
            let (period, end) = (t.get().ps(), self.scenario.run.end_time.get().ps());
            if period == 0 {
                return Err(self.err("output.sample", "expected a window above 0, e.g. \"10us\""));
            }
            if end / period > MAX_WINDOWS {
                return Err(self.err(
                    "output.sample",
                    format!(
                        "{} windows of {t} in run.end_time = {}: at most {MAX_WINDOWS}; choose a longer window",
                        end / period,
                        self.scenario.run.end_time
                    ),
                ));
            }
        }
        if out.trace_max_events == 0 || out.trace_max_events > crate::trace::MAX_TRACE_EVENTS_LIMIT {
            return Err(self.err(
                "output.trace_max_events",
                format!(
                    "expected 1 to {} events, got {}",
                    crate::trace::MAX_TRACE_EVENTS_LIMIT,
                    out.trace_max_events
                ),
            ));
        }
        if out.sample_max_rows == 0 || out.sample_max_rows > MAX_ROWS {
            return Err(self.err(
                "output.sample_max_rows",
                format!("expected 1 to {MAX_ROWS} rows, got {}", out.sample_max_rows),
            ));
        }
        if let Some(p) = &out.pcap
            && (p.max_packets == 0 || p.max_packets > fabrics::engine::MAX_CAPTURED_PACKETS as u64)
        {
            return Err(self.err(
                "output.pcap.max_packets",
                format!(
                    "expected 1 to {} packets, got {}",
                    fabrics::engine::MAX_CAPTURED_PACKETS,
                    p.max_packets
                ),
            ));
        }
        Ok(())
    }

    /// Turns on the packet capture of `[output] pcap` in `fabric`, refusing unknown ports at
    /// `output.pcap.ports[i]`; returns the captured port ids (none without `[output] pcap`).
    pub(crate) fn enable_pcap(
        &self,
        fabric: &mut fabrics::engine::Fabric,
        names: &[&str],
    ) -> Result<Vec<u32>, ScenarioError> {
        let Some(spec) = &self.scenario.output.pcap else {
            return Ok(Vec::new());
        };
        let ports = crate::pcap::resolve_ports(&spec.ports, fabric, names)
            .map_err(|(i, m)| self.err(&format!("output.pcap.ports[{i}]"), m))?;
        fabric.enable_capture(&ports, spec.max_packets as usize);
        Ok(ports)
    }

    /// Refuses sampled port ids that the fabric of `n_ports` egress ports does not have.
    pub(crate) fn check_sample_ports(&self, n_ports: usize) -> Result<(), ScenarioError> {
        let ids = self.scenario.output.sample_port_ids.iter().flatten();
        if let Some(bad) = ids.into_iter().find(|&&p| p as usize >= n_ports) {
            return Err(self.err(
                "output.sample_port_ids",
                format!("port {bad} does not exist: the fabric has ports 0..{n_ports} (see ports.csv)"),
            ));
        }
        Ok(())
    }

    /// The time-series sampler of `fabric` asked for by `[output]`, if any.
    pub(crate) fn sampler(&self, fabric: &fabrics::engine::Fabric) -> Option<crate::timeseries::Sampler> {
        use crate::timeseries::PortSelection;
        let out = &self.scenario.output;
        let period = out.sample?.get();
        let selection = match (&out.sample_port_ids, out.sample_ports) {
            (Some(ids), _) => PortSelection::List(ids.clone()),
            (None, crate::schema::SamplePorts::All) => PortSelection::All,
            (None, crate::schema::SamplePorts::Hotspots) => PortSelection::Hotspots(out.hotspots as usize),
        };
        Some(crate::timeseries::Sampler::new(
            fabric,
            period,
            selection,
            out.sample_max_rows,
        ))
    }
}

/// Most windows of a time series in one run.
const MAX_WINDOWS: u64 = 10_000_000;
/// Largest `sample_max_rows`.
const MAX_ROWS: u64 = 100_000_000;
