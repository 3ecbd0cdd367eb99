//! A probe measured beside both endpoints: in windows of three runs (good,
//! probe, bad; then bad, probe, good; …), judged only after each pair of
//! windows, so over a pair the three runs are centred on the same moment
//! and a drift of the machine, linear over the pair, moves all three alike
//! and cancels. The probe's verdict reads its samples against the
//! endpoints' samples of its own windows ([`report::bisect::classify`]),
//! never against runs made minutes before. And before one commit is named,
//! the boundary measured side by side ([`Bisection::confirm`]).

use super::Bisection;
use super::probe::Unmeasured;
use crate::error::Error;
use report::bisect::{Confirmation, PROBES, Probe, ProbeVerdict, Window, text};
use report::gate::{Side, couple};

/// A run's role in a window.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Role {
    Good,
    Probe,
    Bad,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Good => "good",
            Role::Probe => "probe",
            Role::Bad => "bad",
        }
    }
}

/// The order of window `w` (1-based): good, probe, bad when odd; bad,
/// probe, good when even.
pub(super) fn order(w: u32) -> [Role; 3] {
    match w % 2 {
        1 => [Role::Good, Role::Probe, Role::Bad],
        _ => [Role::Bad, Role::Probe, Role::Good],
    }
}

/// The median of a run's samples (NaN for none).
fn median(xs: &[f64]) -> f64 {
    report::bisect::median_of(xs).map_or(f64::NAN, |(m, _)| m)
}

impl Bisection<'_> {
    /// One commit inside the range: pairs of windows until it reads good
    /// or bad, or `max_rounds` of its own leave it unclear; skipped when it
    /// does not build or run.
    pub(super) fn probe(&mut self, k: usize) -> Result<ProbeVerdict, Error> {
        let n = self.commits.len() - 1;
        let short = text::short(&self.commits[k]).to_string();
        let number = self.probes.len() + 1;
        let mut windows: Vec<Window> = Vec::new();
        let (mut good, mut bad, mut xs) = (Vec::new(), Vec::new(), Vec::new());
        // The couples of runs that ran one after the other: good and the
        // probe, the probe and bad (judged in pairs, issue 76).
        let (mut good_probe, mut probe_bad) = (Vec::new(), Vec::new());
        let mut runs = Vec::new();
        let mut reused = true;
        let mut w = 0;
        let (verdict, c) = loop {
            w += 1;
            let mut medians = [f64::NAN; 3];
            let mut dirs = [String::new(), String::new(), String::new()];
            // The endpoints' runs of this window so far: a window the probe
            // cannot finish is no evidence, and they go.
            let mut partial: Vec<String> = Vec::new();
            let mut ran: Vec<(Role, report::compare::Run)> = Vec::new();
            for role in order(w) {
                let (position, rel) = match role {
                    Role::Probe if w == 1 => (k, format!("{PROBES}/{short}")),
                    Role::Probe => (k, format!("{PROBES}/{short}-{w}")),
                    Role::Good => (0, format!("{PROBES}/{short}-{w}-good")),
                    Role::Bad => (n, format!("{PROBES}/{short}-{w}-bad")),
                };
                let m = match self.measure(position, &rel)? {
                    Ok(m) => m,
                    Err(why) if role == Role::Probe => {
                        for rel in partial {
                            let _ = std::fs::remove_dir_all(self.out.join(rel));
                        }
                        return self.skipped(k, runs, windows, why);
                    }
                    Err(why) => {
                        return Err(Error::Failed(format!(
                            "the {} endpoint cannot be measured again beside probe {short}: {why}",
                            role.name()
                        )));
                    }
                };
                reused &= m.reused;
                let samples = self.samples_of(std::slice::from_ref(&m.run));
                medians[role as usize] = median(&samples);
                match role {
                    Role::Good => good.extend(samples),
                    Role::Bad => bad.extend(samples),
                    Role::Probe => {
                        xs.extend(samples);
                        runs.push(m.dir.clone());
                    }
                }
                if role != Role::Probe {
                    partial.push(m.dir.clone());
                }
                dirs[role as usize] = m.dir;
                ran.push((role, m.run));
            }
            for two in ran.windows(2) {
                let ((r1, a), (r2, b)) = (&two[0], &two[1]);
                // Base: good against the probe, the probe against bad.
                let with_good = *r1 == Role::Good || *r2 == Role::Good;
                let into = if with_good { &mut good_probe } else { &mut probe_bad };
                let side = |r: Role| match (r, with_good) {
                    (Role::Good, _) | (Role::Probe, false) => Side::Base,
                    (Role::Bad, _) | (Role::Probe, true) => Side::Head,
                };
                if let Some((stage, figure)) = &self.target {
                    into.push(couple((side(*r1), a), (side(*r2), b), stage, figure));
                }
            }
            let [good_run, _, bad_run] = dirs;
            windows.push(Window {
                order: order(w).iter().map(|r| r.name().to_string()).collect(),
                good_run,
                bad_run,
                median_good: medians[Role::Good as usize],
                median_probe: medians[Role::Probe as usize],
                median_bad: medians[Role::Bad as usize],
            });
            if w % 2 == 1 {
                continue;
            }
            let c = report::gate::bisection::classify(
                &good_probe,
                &probe_bad,
                self.asked.threshold_pct,
            );
            let more = xs.len() as u32 + 2 * self.asked.rounds <= self.max_rounds;
            match c.verdict {
                Some(v) => break (v, c),
                None if more => eprintln!(
                    "probe {number} ({short}): neither like good nor like bad after {} rounds in {w} windows (p {:.3} against good, {:.3} against bad): two more windows",
                    xs.len(),
                    c.p_good,
                    c.p_bad
                ),
                None => break (ProbeVerdict::Unclear, c),
            }
        };
        self.release(k)?;
        let (median, interval) = report::bisect::median_of(&xs).unzip();
        self.say(Probe {
            commit: self.commits[k].clone(),
            position: k,
            verdict,
            reason: None,
            median,
            interval,
            rounds: xs.len() as u32,
            p_good: Some(c.p_good),
            p_bad: Some(c.p_bad),
            runs,
            reused,
            windows,
        });
        Ok(verdict)
    }

    /// A probe that could not be measured: skipped, with why.
    fn skipped(
        &mut self,
        k: usize,
        runs: Vec<String>,
        windows: Vec<Window>,
        why: Unmeasured,
    ) -> Result<ProbeVerdict, Error> {
        self.release(k)?;
        let mut p = self.endpoint_probe(k, ProbeVerdict::Skipped, runs, false);
        p.reason = Some(why.to_string());
        p.windows = windows;
        self.say(p);
        Ok(ProbeVerdict::Skipped)
    }

    /// A probe record with nothing measured yet but its runs.
    pub(super) fn endpoint_probe(
        &self,
        k: usize,
        verdict: ProbeVerdict,
        runs: Vec<String>,
        reused: bool,
    ) -> Probe {
        Probe {
            commit: self.commits[k].clone(),
            position: k,
            verdict,
            reason: None,
            median: None,
            interval: None,
            rounds: 0,
            p_good: None,
            p_bad: None,
            runs,
            reused,
            windows: Vec::new(),
        }
    }

    /// Records a probe and prints its line.
    pub(super) fn say(&mut self, probe: Probe) {
        let verdict = serde_json::to_value(probe.verdict)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let figure = self.target.as_ref().map_or(self.asked.figure.as_str(), |t| t.1.as_str());
        let beside = match probe.windows.len() {
            0 => String::new(),
            n => {
                let f = |x: f64| report::fmt::figure(figure, x);
                let mid = |g: fn(&Window) -> f64| {
                    report::stats::median(&probe.windows.iter().map(g).collect::<Vec<_>>())
                };
                format!(
                    " (in {n} windows: good {}, probe {}, bad {})",
                    f(mid(|w| w.median_good)),
                    f(mid(|w| w.median_probe)),
                    f(mid(|w| w.median_bad))
                )
            }
        };
        eprintln!(
            "probe {}: {} (position {} of {}): {verdict}{beside}{}",
            self.probes.len() + 1,
            text::short(&probe.commit),
            probe.position,
            self.commits.len() - 1,
            match (&probe.reason, probe.reused) {
                (Some(why), _) => format!(": {why}"),
                (None, true) => " (reused: its runs verify)".into(),
                (None, false) => String::new(),
            }
        );
        self.probes.push(probe);
    }

    /// The boundary between the last good commit `lower` and the first bad
    /// one above it, measured side by side (lower, upper, upper, lower)
    /// where neither is an endpoint (an endpoint already ran in the other's
    /// windows). None when it needs no confirming.
    pub(super) fn confirm(
        &mut self,
        lower: usize,
        upper: usize,
    ) -> Result<Option<Confirmation>, Error> {
        if lower == 0 || upper == self.commits.len() - 1 {
            return Ok(None);
        }
        let short = text::short(&self.commits[upper]).to_string();
        let (mut lows, mut ups, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        let mut ran: Vec<(Side, report::compare::Run)> = Vec::new();
        for (i, (k, side)) in
            [(lower, "lower"), (upper, "upper"), (upper, "upper"), (lower, "lower")]
                .into_iter()
                .enumerate()
        {
            let rel = format!("{PROBES}/{short}-boundary-{}-{side}", i / 2 + 1);
            let m = self.measure(k, &rel)?.map_err(|why| {
                Error::Failed(format!(
                    "commit {} cannot be measured again at the boundary: {why}",
                    text::short(&self.commits[k])
                ))
            })?;
            let samples = self.samples_of(std::slice::from_ref(&m.run));
            if k == lower { &mut lows } else { &mut ups }.extend(samples);
            runs.push(m.dir);
            ran.push((if k == lower { Side::Base } else { Side::Head }, m.run));
        }
        self.release(lower)?;
        self.release(upper)?;
        let figure = self.target.as_ref().map_or(self.asked.figure.as_str(), |t| t.1.as_str());
        let stage = self.target.as_ref().map_or("", |t| t.0.as_str());
        let in_order: Vec<(Side, &report::compare::Run)> =
            ran.iter().map(|(s, r)| (*s, r)).collect();
        let couples = report::gate::couples(&in_order, stage, figure);
        let (held, p) = report::gate::bisection::boundary_holds(&couples, self.asked.threshold_pct);
        let c = Confirmation {
            lower: self.commits[lower].clone(),
            upper: self.commits[upper].clone(),
            runs,
            median_lower: median(&lows),
            median_upper: median(&ups),
            p,
            held,
        };
        eprintln!(
            "boundary {} → {} side by side: {} → {}, p = {}: {}",
            text::short(&c.lower),
            short,
            report::fmt::figure(figure, c.median_lower),
            report::fmt::figure(figure, c.median_upper),
            report::fmt::p_value(p),
            if held { "holds" } else { "does not hold: no single commit is named" }
        );
        Ok(Some(c))
    }
}
