"""The manual quotes sheet: prices with no machine-readable source, typed in by hand.

For providers with no public price API or page worth scraping (智星云 / ai-galaxy.cn, AutoDL
packages, CoreWeave contracts), or sales quotes and negotiated prices: a CSV file, one row per
offer, in the contract's vocabulary. Its path is the setting `GPUPRICE_MANUAL_SHEET` (default
`manual_quotes.csv` in the working directory); without the file the run is *skipped*, like a
provider without keys. README, "Manual quotes", documents the columns; `docs/manual_quotes.example.csv`
is an example.

This is a collector like the others: `fetch` reads the file (no HTTP: the sheet is local), `parse` is
pure over its bytes (collectors.manual.sheet), and the quotes pass the same sanity checks and the
same normalization as every provider's, and go stale on the same rules (by the sheet's last good
load). Each row names the page or document its price comes from in `source_url`
(https://www.ai-galaxy.cn/…, a PDF quote, `mailto:sales@…`), and `date_seen` becomes the quote's
`observed_at`, so FX uses the rate of the day the price was seen.

Quirks:
- **One provider, `manual`.** The store replaces a provider's offers, and judges staleness, by the
  run that brought them; every sheet row comes from the `manual` run. So quotes keep `manual` as
  provider and carry their own provider in the sku (`zhixingyun/A100-80G-PCIe`) and the notes
  ("manual quote for zhixingyun, seen 2026-11-20"). A row deleted from the sheet is withdrawn on
  the next load.
- **Bad rows never sink the sheet.** A row that cannot be a quote is refused with file, line and
  reason (stored with the run's rejections), and the good rows load. A sheet with no good row, no
  header, or a missing/unknown column fails the run with the reasons.
- **Any card, whole or a slice.** `gpu_model` is read through the card table's names (a name it
  does not know is a refused row, never guessed); a MIG profile in it (`A100 SXM4 80GB MIG 3g.40gb`)
  or a `gpu_fraction` column (`0.5`) makes the quote a slice (`gpu_fraction`, `gpu_partition`) whose
  `gpu_memory_gb` is the slice's own, checked against the card.
- **Offline** (`--offline`), the sheet is the recorded one listed in `fixtures/manual/replay.json`,
  like every provider's recorded answers, whatever `GPUPRICE_MANUAL_SHEET` says.
"""

from collectors.manual.collector import ManualCollector

__all__ = ["ManualCollector"]
