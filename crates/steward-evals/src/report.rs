//! Results per case (`passed | failed | skipped`, failing checks named) and totals (success
//! rate; rounds, tool calls, tokens and time as median and spread over the runs), printed as
//! text, JSON or JUnit XML.

use serde::Serialize;

use crate::scorer::CheckFailure;

/// A case's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every run passed every check.
    Passed,
    /// At least one run failed a check.
    Failed,
    /// Not run; see [`CaseReport::skip_reason`].
    Skipped,
}

/// One run of a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Every check passed.
    pub passed: bool,
    /// The failed checks.
    pub failures: Vec<CheckFailure>,
    /// Final status wire name (`completed`, …), absent when the run could not start.
    pub status: Option<String>,
    /// Planner calls.
    pub rounds: u32,
    /// Tool calls proposed.
    pub tool_calls: u32,
    /// Input plus output tokens.
    pub tokens: u64,
    /// Wall time in ms.
    pub duration_ms: u64,
}

/// Median and spread (smallest, largest) of a measure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Spread {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// Over `values`; all zero when there are none.
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Spread { median, min: v[0], max: v[n - 1] }
    }
}

/// Medians and spreads of a set of runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Measures {
    /// Planner calls.
    pub rounds: Spread,
    /// Tool calls.
    pub tool_calls: Spread,
    /// Tokens.
    pub tokens: Spread,
    /// Wall time in ms.
    pub duration_ms: Spread,
}

impl Measures {
    /// Over `runs`.
    pub fn of<'a>(runs: impl Iterator<Item = &'a RunReport> + Clone) -> Measures {
        let pick = |f: fn(&RunReport) -> f64| Spread::of(&runs.clone().map(f).collect::<Vec<_>>());
        Measures {
            rounds: pick(|r| r.rounds as f64),
            tool_calls: pick(|r| r.tool_calls as f64),
            tokens: pick(|r| r.tokens as f64),
            duration_ms: pick(|r| r.duration_ms as f64),
        }
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseReport {
    /// Case name.
    pub name: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Why it was skipped.
    pub skip_reason: Option<String>,
    /// Its runs (none when skipped).
    pub runs: Vec<RunReport>,
    /// Medians and spreads over its runs.
    pub measures: Measures,
}

/// Totals over all cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Cases.
    pub cases: usize,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
    /// Runs executed.
    pub runs: usize,
    /// Runs that passed.
    pub runs_passed: usize,
    /// `runs_passed / runs`, absent when nothing ran.
    pub success_rate: Option<f64>,
    /// Medians and spreads over every run.
    pub measures: Measures,
}

/// The whole evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// Per case, in order.
    pub cases: Vec<CaseReport>,
    /// Totals.
    pub totals: Totals,
}

impl EvalReport {
    /// A report over `cases` with its totals.
    pub fn new(cases: Vec<CaseReport>) -> EvalReport {
        let count = |v: Verdict| cases.iter().filter(|c| c.verdict == v).count();
        let runs: Vec<&RunReport> = cases.iter().flat_map(|c| c.runs.iter()).collect();
        let runs_passed = runs.iter().filter(|r| r.passed).count();
        let totals = Totals {
            cases: cases.len(),
            passed: count(Verdict::Passed),
            failed: count(Verdict::Failed),
            skipped: count(Verdict::Skipped),
            runs: runs.len(),
            runs_passed,
            success_rate: (!runs.is_empty()).then(|| runs_passed as f64 / runs.len() as f64),
            measures: Measures::of(runs.iter().copied()),
        };
        EvalReport { cases, totals }
    }

    /// True when any case failed.
    pub fn any_failed(&self) -> bool {
        self.totals.failed > 0
    }

    /// The report as text, one line per case, failed checks indented below it, totals last.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            match case.verdict {
                Verdict::Skipped => out.push_str(&format!(
                    "SKIP  {}: {}\n",
                    case.name,
                    case.skip_reason.as_deref().unwrap_or("skipped")
                )),
                verdict => {
                    let tag = if verdict == Verdict::Passed { "PASS" } else { "FAIL" };
                    let passed = case.runs.iter().filter(|r| r.passed).count();
                    let m = &case.measures;
                    out.push_str(&format!(
                        "{tag}  {}  {passed}/{} runs  rounds {}  tool calls {}  tokens {}  time {}\n",
                        case.name,
                        case.runs.len(),
                        fmt_spread(&m.rounds, ""),
                        fmt_spread(&m.tool_calls, ""),
                        fmt_spread(&m.tokens, ""),
                        fmt_spread(&m.duration_ms, " ms"),
                    ));
                    for (i, run) in case.runs.iter().enumerate() {
                        for f in &run.failures {
                            out.push_str(&format!("      run {}: {}: {}\n", i + 1, f.check, f.detail));
                        }
                    }
                }
            }
        }
        let t = &self.totals;
        let rate = t.success_rate.map_or("n/a".to_string(), |r| format!("{:.1}%", r * 100.0));
        out.push_str(&format!(
            "{} cases: {} passed, {} failed, {} skipped; success rate {rate} ({}/{} runs)\n",
            t.cases, t.passed, t.failed, t.skipped, t.runs_passed, t.runs
        ));
        let m = &t.measures;
        out.push_str(&format!(
            "median (min–max) per run: rounds {}  tool calls {}  tokens {}  time {}\n",
            fmt_spread(&m.rounds, ""),
            fmt_spread(&m.tool_calls, ""),
            fmt_spread(&m.tokens, ""),
            fmt_spread(&m.duration_ms, " ms"),
        ));
        out
    }

    /// The report as one JSON object (`cases`, `totals`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report as JUnit XML: one `testsuite` named `steward-eval`, one `testcase` per case
    /// (its runs aggregated; time in seconds, the sum of its runs), a `failure` element listing
    /// each failed check per run, a `skipped` element with the reason.
    pub fn to_junit(&self) -> String {
        let t = &self.totals;
        let total_s: f64 =
            self.cases.iter().flat_map(|c| &c.runs).map(|r| r.duration_ms as f64 / 1000.0).fold(0.0, |a, b| a + b);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<testsuites>\n<testsuite name=\"steward-eval\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{total_s:.3}\">\n",
            t.cases, t.failed, t.skipped
        ));
        for case in &self.cases {
            let secs = case.runs.iter().map(|r| r.duration_ms as f64 / 1000.0).fold(0.0, |a, b| a + b);
            out.push_str(&format!(
                "  <testcase classname=\"steward.eval\" name=\"{}\" time=\"{secs:.3}\">\n",
                xml_escape(&case.name)
            ));
            match case.verdict {
                Verdict::Passed => {}
                Verdict::Skipped => out.push_str(&format!(
                    "    <skipped message=\"{}\"/>\n",
                    xml_escape(case.skip_reason.as_deref().unwrap_or("skipped"))
                )),
                Verdict::Failed => {
                    let failed = case.runs.iter().filter(|r| !r.passed).count();
                    let mut body = String::new();
                    for (i, run) in case.runs.iter().enumerate() {
                        for f in &run.failures {
                            body.push_str(&format!("run {}: {}: {}\n", i + 1, f.check, f.detail));
                        }
                    }
                    out.push_str(&format!(
                        "    <failure message=\"{failed} of {} runs failed\" type=\"eval\">{}</failure>\n",
                        case.runs.len(),
                        xml_escape(&body)
                    ));
                }
            }
            out.push_str("  </testcase>\n");
        }
        out.push_str("</testsuite>\n</testsuites>\n");
        out
    }
}

fn fmt_spread(s: &Spread, unit: &str) -> String {
    let n = |v: f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") };
    if s.min == s.max {
        format!("{}{unit}", n(s.median))
    } else {
        format!("{}{unit} ({}–{})", n(s.median), n(s.min), n(s.max))
    }
}

/// Escapes text for XML attribute values and character data (XML 1.0 §2.4, §3.3.3); control
/// characters XML 1.0 cannot carry are replaced by U+FFFD.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(passed: bool, ms: u64) -> RunReport {
        let failures = if passed {
            Vec::new()
        } else {
            vec![CheckFailure { check: "events".into(), detail: "missing <tool_denied> & co".into() }]
        };
        RunReport {
            passed,
            failures,
            status: Some("completed".into()),
            rounds: 2,
            tool_calls: 1,
            tokens: 0,
            duration_ms: ms,
        }
    }

    fn case(name: &str, verdict: Verdict, runs: Vec<RunReport>) -> CaseReport {
        let measures = Measures::of(runs.iter());
        let skip_reason = (verdict == Verdict::Skipped).then(|| "needs \"rag\"".to_string());
        CaseReport { name: name.into(), verdict, skip_reason, runs, measures }
    }

    #[test]
    fn spread_is_median_and_range() {
        assert_eq!(Spread::of(&[5.0, 1.0, 3.0]), Spread { median: 3.0, min: 1.0, max: 5.0 });
        assert_eq!(Spread::of(&[1.0, 2.0, 4.0, 10.0]).median, 3.0);
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn totals_text_and_junit() {
        let report = EvalReport::new(vec![
            case("a", Verdict::Passed, vec![run(true, 10), run(true, 30)]),
            case("b", Verdict::Failed, vec![run(false, 20), run(true, 20)]),
            case("c", Verdict::Skipped, vec![]),
        ]);
        assert_eq!((report.totals.passed, report.totals.failed, report.totals.skipped), (1, 1, 1));
        assert_eq!(report.totals.success_rate, Some(0.75));
        assert_eq!(report.totals.measures.duration_ms, Spread { median: 20.0, min: 10.0, max: 30.0 });
        assert!(report.any_failed());
        let text = report.to_text();
        assert!(text.contains("FAIL  b  1/2 runs"), "{text}");
        assert!(text.contains("run 1: events: missing"), "{text}");
        assert!(text.contains("SKIP  c: needs \"rag\""), "{text}");
        assert!(text.contains("success rate 75.0% (3/4 runs)"), "{text}");
        let xml = report.to_junit();
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert!(xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), "{xml}");
        assert!(xml.contains("name=\"c\" time=\"0.000\""), "{xml}");
        assert!(xml.contains("<skipped message=\"needs &quot;rag&quot;\"/>"), "{xml}");
        assert!(xml.contains("missing &lt;tool_denied&gt; &amp; co"), "{xml}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["cases"][1]["verdict"], "failed");
    }
}
