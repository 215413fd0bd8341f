//! The `network` setting of a command tool and of `[shell]`: none, all, or a host list.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use steward_egress::{HostError, HostList};

/// A tool's network access as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// `false`: none.
    #[default]
    Off,
    /// `true`: everything.
    All,
    /// A list of hosts, as written (checked by [`Network::validate`]).
    Hosts(Vec<String>),
}

impl Network {
    /// True unless [`Network::Off`]: the tool reaches outside (a sink, and a source of
    /// untrusted text).
    pub fn enabled(&self) -> bool {
        *self != Network::Off
    }

    /// Checks a host list. Errors name the bad entry.
    pub fn validate(&self) -> Result<(), HostError> {
        match self {
            Network::Hosts(entries) => HostList::parse(entries).map(|_| ()),
            _ => Ok(()),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Network {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Network".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`false`: no network; `true`: all of it; a list of host names: those hosts only.",
            "anyOf": [{ "type": "boolean" }, { "type": "array", "items": { "type": "string" } }],
        })
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Off => serializer.serialize_bool(false),
            Network::All => serializer.serialize_bool(true),
            Network::Hosts(hosts) => hosts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Network, D::Error> {
        struct NetworkVisitor;
        impl<'de> Visitor<'de> for NetworkVisitor {
            type Value = Network;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false, or a list of host names such as [\"crates.io\"]")
            }
            fn visit_bool<E: de::Error>(self, value: bool) -> Result<Network, E> {
                Ok(if value { Network::All } else { Network::Off })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Network, A::Error> {
                let mut hosts = Vec::new();
                while let Some(host) = seq.next_element::<String>()? {
                    hosts.push(host);
                }
                let network = Network::Hosts(hosts);
                network.validate().map_err(|e| de::Error::custom(format!("network: {e}")))?;
                Ok(network)
            }
        }
        deserializer.deserialize_any(NetworkVisitor)
    }
}
