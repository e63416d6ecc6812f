//! `fernhill load`: simulated leads confirming refunds against one or several servers.

use anyhow::Context as _;

use crate::{
    fleet::{Fleet, FleetPlan},
    load::{self, LoadPlan},
};

/// What to drive: given servers and their API, or a fleet started here.
pub enum Target {
    Servers { urls: Vec<String>, shop_api: String },
    Fleet { replicas: usize, store: String },
}

pub async fn run(target: Target, leads: usize, confirmations: usize, order: String) -> anyhow::Result<()> {
    let fleet;
    let (urls, shop_api) = match target {
        Target::Servers { urls, shop_api } => (urls, shop_api),
        Target::Fleet { replicas, store } => {
            let program = std::env::current_exe().context("finding the fernhill binary")?;
            fleet = Fleet::start(&program, &FleetPlan::new(replicas, &store)).await?;
            println!("started {replicas} replicas on {} ({} store)", fleet.urls.join(", "), store);
            (fleet.urls.clone(), fleet.api.url.clone())
        }
    };
    let plan = LoadPlan { urls, shop_api, leads, confirmations, order };
    let report = load::run(&plan).await?;
    print!("{}", report.render());
    anyhow::ensure!(
        report.problems.is_empty() && report.released == confirmations,
        "{} problems; {} of {confirmations} released",
        report.problems.len(),
        report.released
    );
    Ok(())
}
