//! Toolchains (SPEC T6): a named sequence of tools. Calling the chain (with the first tool's
//! arguments) enters chain mode, in which only the chain's next tool is offered, step by step;
//! a failing step ends the chain and says so. Tools marked `callable = "chain_only"` are
//! offered only inside their chain.

use steward_protocol::{ToolCall, ToolChoice, ToolSpec};

pub use steward_config::ChainConfig;
use steward_tools::ToolRegistry;

/// Where a run stands with its toolchains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChainState {
    /// No chain is running: every ordinary tool and every chain is offered.
    #[default]
    Idle,
    /// Inside chain `chain`; `next` is the index of the tool to call next.
    Active {
        /// Index into the chains.
        chain: usize,
        /// Index of the next tool in that chain.
        next: usize,
    },
}

/// What to do with one proposed call.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainPlan {
    /// An ordinary call, outside any chain.
    Plain,
    /// The call (renamed to the chain's tool) is step `step` of chain `chain`.
    Step {
        /// Index into the chains.
        chain: usize,
        /// Step index (0 = the chain was just called).
        step: usize,
        /// The call as the underlying tool sees it (same id and arguments).
        call: ToolCall,
    },
    /// Refused, with the rule and the reason.
    Refuse(&'static str, String),
}

/// Why the configured chains cannot be used ([`Chains::new`]); names the chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The chain lists no tools.
    #[error("tool_call_chain `{0}` has no tools")]
    NoTools(String),
    /// A tool or an earlier chain has the chain's name.
    #[error("tool_call_chain `{0}`: the name is already taken by a tool or chain")]
    NameTaken(String),
    /// The chain names a tool the registry lacks.
    #[error("tool_call_chain `{chain}` names `{tool}`, which is not a tool")]
    UnknownTool {
        /// The chain.
        chain: String,
        /// The name that is not a tool.
        tool: String,
    },
}

/// The configured toolchains, checked against the registry.
#[derive(Debug, Clone, Default)]
pub struct Chains {
    chains: Vec<ChainConfig>,
}

impl Chains {
    /// Checks the chains: at least one tool each, every tool registered, no chain named like a
    /// tool or another chain. Errors name the chain.
    pub fn new(chains: &[ChainConfig], registry: &ToolRegistry) -> Result<Chains, ChainError> {
        let mut seen = std::collections::BTreeSet::new();
        for chain in chains {
            if chain.tools.is_empty() {
                return Err(ChainError::NoTools(chain.name.clone()));
            }
            if registry.get(&chain.name).is_some() || !seen.insert(chain.name.clone()) {
                return Err(ChainError::NameTaken(chain.name.clone()));
            }
            if let Some(missing) = chain.tools.iter().find(|t| registry.get(t).is_none()) {
                return Err(ChainError::UnknownTool { chain: chain.name.clone(), tool: missing.clone() });
            }
        }
        Ok(Chains { chains: chains.to_vec() })
    }

    /// The tools to offer in `state` (in [`steward_tools::offer_order`]), and a tool choice to
    /// force (the chain's next tool).
    pub fn offered(&self, state: ChainState, registry: &ToolRegistry) -> (Vec<ToolSpec>, Option<ToolChoice>) {
        match state {
            ChainState::Active { chain, next } => {
                let name = &self.chains[chain].tools[next];
                let specs = registry.get(name).map(|t| vec![t.spec().clone()]).unwrap_or_default();
                (specs, Some(ToolChoice::Named(name.clone())))
            }
            ChainState::Idle => {
                let mut specs: Vec<ToolSpec> = registry
                    .specs()
                    .into_iter()
                    .filter(|s| registry.get(&s.name).is_some_and(|t| !t.chain_only()))
                    .collect();
                for chain in &self.chains {
                    if let Some(first) = registry.get(&chain.tools[0]) {
                        let mut spec = first.spec().clone();
                        spec.name = chain.name.clone();
                        spec.description = format!(
                            "{} (a chain: {}; its arguments are those of `{}`)",
                            chain.description,
                            chain.tools.join(" → "),
                            chain.tools[0]
                        );
                        specs.push(spec);
                    }
                }
                steward_tools::offer_order(&mut specs);
                (specs, None)
            }
        }
    }

    /// Decides what a proposed call is in `state`.
    pub fn plan(&self, state: ChainState, call: &ToolCall, registry: &ToolRegistry) -> ChainPlan {
        match state {
            ChainState::Active { chain, next } => {
                let expected = &self.chains[chain].tools[next];
                if &call.name == expected {
                    ChainPlan::Step { chain, step: next, call: call.clone() }
                } else {
                    ChainPlan::Refuse(
                        "chain_mode",
                        format!("chain `{}` is running: only `{expected}` may be called now", self.chains[chain].name),
                    )
                }
            }
            ChainState::Idle => {
                if let Some(index) = self.chains.iter().position(|c| c.name == call.name) {
                    let mut first = call.clone();
                    first.name = self.chains[index].tools[0].clone();
                    return ChainPlan::Step { chain: index, step: 0, call: first };
                }
                if registry.get(&call.name).is_some_and(|t| t.chain_only()) {
                    return ChainPlan::Refuse(
                        "chain_only",
                        format!("`{}` may only be called inside its toolchain", call.name),
                    );
                }
                ChainPlan::Plain
            }
        }
    }

    /// The state after step `step` of `chain` ended (`failed` when its result was an error),
    /// and a note for the model when the chain ended.
    pub fn after(&self, chain: usize, step: usize, failed: bool) -> (ChainState, Option<String>) {
        let def = &self.chains[chain];
        if failed {
            let note = format!("[chain `{}` ended: step {} (`{}`) failed]", def.name, step + 1, def.tools[step]);
            return (ChainState::Idle, Some(note));
        }
        if step + 1 < def.tools.len() {
            let note = format!("[chain `{}`: next step is `{}`]", def.name, def.tools[step + 1]);
            (ChainState::Active { chain, next: step + 1 }, Some(note))
        } else {
            (ChainState::Idle, Some(format!("[chain `{}` completed]", def.name)))
        }
    }
}
