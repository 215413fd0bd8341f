//! The shape of one program's table of global options (the tables themselves are in
//! [`super::tables`], the reading in [`super::options`]).

/// Global options a program accepts before its subcommand (or first operand).
///
/// Spellings read for a value option `-x` / `--long`: the next word (`-x V`, `--long V`),
/// `--long=V` / `-x=V`, and attached `-xV` for a two-character option.
pub(crate) struct OptionTable {
    /// Program base names the table is for (`python`, `python3`; `python3.12` too).
    pub programs: &'static [&'static str],
    /// Options without a value.
    pub flags: &'static [&'static str],
    /// Options taking a value.
    pub with_value: &'static [&'static str],
    /// Options whose value is only ever attached (`--exec-path=DIR`, `-chdir=DIR`, `-Oline`);
    /// bare, such an option is a flag if [`OptionTable::flags`] lists it, else unknown.
    pub attached_only: &'static [&'static str],
    /// Options taking the next word as a value only when it is a number (`make -j 4`).
    pub optional_number: &'static [&'static str],
    /// Options that end the options and stand where a subcommand would (`python -m MOD`,
    /// `python -c CODE`): rules see the words from the option on.
    pub operand_options: &'static [&'static str],
    /// Options the program reads as a command of its own (`git --version` is `git
    /// version`): the subcommand is the option itself.
    pub stops: &'static [&'static str],
    /// Options that change what the subcommand runs (configuration, helper programs): an
    /// allow rule never matches a command that uses one; deny and ask rules still do.
    pub risky: &'static [&'static str],
    /// Short options group (`-vq`, `-sj4`), read letter by letter.
    pub clusters: bool,
    /// A `+toolchain` word may come before the subcommand (rustup's proxies).
    pub toolchain: bool,
    /// `NAME=value` words before the first operand set variables (`make CC=x all`); each
    /// counts as risky.
    pub assignments: bool,
    /// Options are read by npm's `nopt`: a flag takes a following `true` or `false` as its
    /// value (`--force false`), and a value option followed by an option-like word may take
    /// no value; the latter, and a computed word after a flag, leave the subcommand unsure.
    pub nopt: bool,
    /// Every operand is a command of its own (`make all deploy` runs the goal `deploy`):
    /// deny and ask rules about a subcommand match at any word after the options.
    pub every_operand: bool,
}
