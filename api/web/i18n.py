"""Chinese and English for the pages: the language a request asks for, and the words in it.

The language is `lang=zh|en` when the URL gives it (a link keeps it), else the best of
`Accept-Language` (q-values honoured), else Chinese, the seed audience's. What the answers say in
words (a cost basis, a rejection's reason, an estimate's assumptions) is data and stays as the
answer has it; the pages translate their own labels and the vocabulary's values (pricing models,
availability, run status). A key without a translation reads as itself, so a new field of an
answer shows up under its own name until someone names it here."""

from __future__ import annotations

from typing import Any

LANGUAGES = ("zh", "en")
DEFAULT_LANGUAGE = "zh"
HTML_LANG = {"zh": "zh-CN", "en": "en"}
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}


def negotiate(asked: str | None, accept_language: str | None) -> str:
    """`asked` (the `lang` parameter) if it names a language, else the best of Accept-Language."""
    if asked and asked.strip().lower() in LANGUAGES:
        return asked.strip().lower()
    if not accept_language:
        return DEFAULT_LANGUAGE
    best, best_q = None, 0.0
    for position, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and (q > best_q or (q == best_q and best is None)):
            best, best_q = primary, q - position * 1e-6  # the earlier of equal q-values wins
    return best or "en"


# key → (English, Chinese)
MESSAGES: dict[str, tuple[str, str]] = {
    # navigation and frame
    "nav": ("Pages", "页面"),
    "skip": ("Skip to content", "跳到正文"),
    "market": ("Market", "行情"),
    "job": ("My job", "我的任务"),
    "status": ("Providers", "数据源"),
    "digests": ("Digests", "每日变化"),
    "api": ("API", "API"),
    "language": ("Language", "语言"),
    "offline_note": (
        "Offline data: recorded prices, not today's.",
        "离线数据：录制的价格，不是今天的。",
    ),
    "footer": (
        "Prices from each cloud's own public sources, in CNY per GB of GPU memory per hour.",
        "价格来自各云厂商公开的价格来源，折算为每 GB 显存每小时的人民币价格。",
    ),
    "invalid": ("Some parameters are not valid", "部分参数无效"),
    "apply": ("Apply", "应用"),
    "reset": ("Reset", "重置"),
    "none": ("none", "无"),
    "yes": ("yes", "是"),
    "no": ("no", "否"),
    "any": ("any", "不限"),
    "default": ("default", "默认"),
    "json": ("JSON", "JSON"),
    "as_of": ("Prices as of", "价格截至"),
    "utc": ("UTC", "UTC"),
    # market
    "market_title": ("GPU rental prices", "GPU 租用价格"),
    "market_lead": (
        "Every current offer. Sort by any column; the link holds the whole view.",
        "所有当前报价。可按任意列排序；链接保存整个视图。",
    ),
    "filters": ("Filters", "筛选"),
    "card": ("Card", "显卡"),
    "mem_gpu": ("Memory per GPU (GB)", "单卡显存 (GB)"),
    "min_total": ("Total memory at least (GB)", "总显存不少于 (GB)"),
    "include_unavailable": ("Include sold out", "包括售罄"),
    "include_stale": ("Include stale", "包括过期报价"),
    "date": ("Market at the end of day (UTC)", "某日结束时的行情 (UTC)"),
    "view": ("View", "显示"),
    "currency": ("Currency", "货币"),
    "show_in": ("Show prices in", "价格显示为"),
    "native": ("native", "原币"),
    "columns": ("Columns", "列"),
    "copy_csv": ("Copy CSV", "复制 CSV"),
    "copy_md": ("Copy Markdown", "复制 Markdown"),
    "download_csv": ("Download CSV", "下载 CSV"),
    "download_md": ("Download Markdown", "下载 Markdown"),
    "copied": ("Copied", "已复制"),
    "offers_count": ("{count} offers", "共 {count} 条报价"),
    "shown": ("showing {first}–{last}", "显示第 {first}–{last} 条"),
    "previous": ("Previous", "上一页"),
    "next": ("Next", "下一页"),
    "fx_title": ("FX used (ECB reference rates, per unit in CNY)", "使用的汇率（欧洲央行参考汇率，每单位折合人民币）"),
    "fx_none": ("no conversion needed", "无需换算"),
    "stale": ("stale", "过期"),
    "sort_by": ("sort by {column}", "按{column}排序"),
    "no_rows": ("No offer matches these filters.", "没有符合筛选条件的报价。"),
    "table_caption": ("Current offers", "当前报价"),
    # columns and fields
    "provider": ("Provider", "云厂商"),
    "region": ("Region", "地域"),
    "sku": ("SKU", "规格"),
    "gpu_model": ("Card", "显卡"),
    "gpu": ("Card", "显卡"),
    "gpu_memory_gb": ("GB/GPU", "单卡 GB"),
    "gpu_count": ("GPUs", "卡数"),
    "total_gb": ("Total GB", "总显存 GB"),
    "pricing": ("Pricing", "计费"),
    "price": ("Native price", "原始价格"),
    "availability": ("Availability", "库存"),
    "observed_at": ("Seen (UTC)", "观测时间 (UTC)"),
    "form_factor": ("Form factor", "形态"),
    "interconnect": ("Interconnect", "互联"),
    "fx_rate": ("FX rate", "汇率"),
    "fx_date": ("FX date", "汇率日期"),
    "source_url": ("Source", "来源"),
    "vcpus": ("vCPUs", "vCPU"),
    "memory_gib": ("RAM GiB", "内存 GiB"),
    "term_hours": ("Term h", "期限 h"),
    "list_price": ("List price", "标价"),
    "tax_included": ("Tax included", "含税"),
    "billing_increment_s": ("Billing step s", "计费粒度 s"),
    "billing_minimum_s": ("Minimum charge s", "最低计费 s"),
    "price_steps": ("Price steps", "阶梯价"),
    "notes": ("Notes", "备注"),
    "fx_note": ("FX note", "汇率说明"),
    "offline": ("Offline", "离线"),
    "held_reason": ("Held because", "保留原因"),
    "run_id": ("Run", "运行"),
    # vocabulary values
    "pricing.on_demand": ("on-demand", "按需"),
    "pricing.spot": ("spot", "竞价"),
    "pricing.monthly": ("monthly", "包月"),
    "pricing.reserved_1y": ("reserved 1 yr", "预留 1 年"),
    "pricing.reserved_3y": ("reserved 3 yr", "预留 3 年"),
    "availability.available": ("available", "有货"),
    "availability.sold_out": ("sold out", "售罄"),
    "availability.unknown": ("unknown", "未知"),
    "status.ok": ("ok", "成功"),
    "status.failed": ("failed", "失败"),
    "status.skipped": ("skipped", "跳过"),
    "status.never_run": ("never run", "从未运行"),
    "unit.hour": ("hour", "小时"),
    "unit.month": ("month", "月"),
    "unit.year": ("year", "年"),
    "unit.term": ("term", "期"),
    # my job
    "job_title": ("What does my job cost?", "我的任务要花多少钱？"),
    "job_lead": (
        "Give the GPU memory and hours, or describe the job (model, workload, context, batch) and let the "
        "estimator size it. The answer is /cheapest's.",
        "填写所需显存和时长，或描述任务（模型、任务类型、上下文、批大小）由估算器计算显存。答案与 /cheapest 相同。",
    ),
    "group.job": ("The job", "任务"),
    "group.model": ("Or describe it", "或描述任务"),
    "group.architecture": ("Architecture (optional, overrides the catalog)", "模型结构（可选，覆盖目录）"),
    "group.offers": ("Which offers", "报价范围"),
    "group.other": ("More", "更多"),
    "ask": ("Find the cheapest", "查找最便宜的方案"),
    "mem": ("GPU memory needed (GB)", "所需显存 (GB)"),
    "hours": ("Hours", "时长（小时）"),
    "model": ("Model", "模型"),
    "params": ("Parameters (e.g. 7B)", "参数量（如 7B）"),
    "workload": ("Workload", "任务类型"),
    "precision": ("Precision", "精度"),
    "context": ("Context (tokens)", "上下文（token）"),
    "batch": ("Batch (sequences)", "批大小（序列数）"),
    "gpus": ("GPUs", "GPU 数"),
    "zero": ("ZeRO stage", "ZeRO 阶段"),
    "gradient_checkpointing": ("Gradient checkpointing", "梯度检查点"),
    "optimizer": ("Optimizer", "优化器"),
    "lora_rank": ("LoRA rank", "LoRA 秩"),
    "engine": ("Inference engine", "推理引擎"),
    "layers": ("Layers", "层数"),
    "hidden": ("Hidden size", "隐藏维度"),
    "heads": ("Attention heads", "注意力头数"),
    "kv_heads": ("KV heads", "KV 头数"),
    "head_dim": ("Head dim", "头维度"),
    "vocab": ("Vocabulary", "词表大小"),
    "intermediate": ("MLP width", "MLP 宽度"),
    "single_gpu": ("Whole job on one GPU", "整个任务放在一张卡上"),
    "interruptible": ("Allow spot (interruptible)", "允许竞价（可中断）"),
    "rank_by": ("Rank by", "排序依据"),
    "limit": ("Options shown", "显示方案数"),
    "tokens": ("Tokens", "Token 数"),
    "options": ("Options", "方案"),
    "rank": ("#", "#"),
    "billed_hours": ("Billed h", "计费时长 h"),
    "total_cny": ("Total ¥", "总价 ¥"),
    "arithmetic": ("Arithmetic", "计算"),
    "billing_rule": ("Billing rule", "计费规则"),
    "per_second": ("per {step} s", "每 {step} 秒"),
    "minimum": ("minimum {minimum} s", "最低 {minimum} 秒"),
    "estimate": ("Estimate", "显存估算"),
    "band": ("Band", "区间"),
    "point": ("Point estimate", "点估计"),
    "per_gpu": ("Per GPU", "每卡"),
    "breakdown": ("Breakdown", "构成"),
    "component": ("Component", "组成"),
    "gib": ("GiB", "GiB"),
    "assumptions": ("Assumptions", "假设"),
    "warnings": ("Warnings", "警告"),
    "viability": ("Every configuration, judged", "各配置评估"),
    "configuration": ("Configuration", "配置"),
    "need": ("Need per GPU", "每卡需求"),
    "need_usable": ("Need / usable GiB", "需求 / 可用 GiB"),
    "usable": ("Usable per GPU", "每卡可用"),
    "strategy": ("Layout", "布局"),
    "verdict": ("Verdict", "结论"),
    "viable": ("viable", "可行"),
    "rejected": ("rejected", "不可行"),
    "excluded": ("Viable but left out", "可行但被排除"),
    "excluded.stale": ("stale", "过期"),
    "excluded.unavailable": ("sold out", "售罄"),
    "excluded.interruptible": ("spot", "竞价"),
    "unpriced": ("Not priced in CNY", "无法折算人民币"),
    "no_options": ("No viable option.", "没有可行方案。"),
    "viable_count": ("{count} viable options", "共 {count} 个可行方案"),
    "tokens_per_s": ("tokens/s", "tokens/s"),
    "cny_per_mtoken": ("¥/M tokens", "¥/百万 token"),
    "job_notes": ("Notes", "说明"),
    "throughput": ("Throughput", "吞吐"),
    "interruptible_flag": ("interruptible", "可中断"),
    # offer
    "offer_title": ("Offer", "报价"),
    "history": ("Price history", "价格历史"),
    "chart_native": ("Native price ({currency}/{unit})", "原始价格（{currency}/{unit}）"),
    "chart_per_gb": ("¥/GB·h", "¥/GB·h"),
    "points": ("Observations", "观测记录"),
    "since": ("Since", "起始"),
    "until": ("Until", "截止"),
    "window": ("Window", "时间范围"),
    "days": ("{days} days", "{days} 天"),
    "not_current": (
        "Not a current offer: withdrawn, or outside these filters. Its history is below.",
        "当前没有这条报价（已下架或不在筛选范围内）。下面是它的历史。",
    ),
    "no_history": ("No observation in this window.", "此时间范围内没有观测记录。"),
    "fx_used": ("FX used", "使用的汇率"),
    "run_record": ("Run record", "运行记录"),
    "current": ("Current quote", "当前报价"),
    "id_shared": (
        "{count} offers gpuprice has observed share this id; each has its own link:",
        "gpuprice 观测到的 {count} 条报价共用这个 id；每条都有自己的链接：",
    ),
    "series_more": ("{count} series match; showing the first.", "共 {count} 个序列；显示第一个。"),
    # providers
    "status_title": ("Providers", "数据源"),
    "status_lead": (
        "Each source's last runs, errors, staleness and schedule.",
        "每个来源的最近运行、错误、是否过期和采集计划。",
    ),
    "run_status": ("Status", "状态"),
    "last_run_at": ("Last run (UTC)", "最近运行 (UTC)"),
    "last_success_at": ("Last success (UTC)", "最近成功 (UTC)"),
    "offers": ("Offers", "报价"),
    "stale_offers": ("Stale", "过期"),
    "held_offers": ("Held", "保留"),
    "schedule": ("Schedule", "计划"),
    "every": ("every {interval}", "每 {interval}"),
    "error": ("Error", "错误"),
    "export_error": ("Export error", "导出错误"),
    "recent_runs": ("Recent runs", "最近运行"),
    "started_at": ("Started (UTC)", "开始 (UTC)"),
    "finished_at": ("Finished (UTC)", "结束 (UTC)"),
    "duration": ("Took", "耗时"),
    "quote_count": ("Quotes", "报价数"),
    "rejected_count": ("Rejected", "拒绝"),
    "scope": ("Scope", "范围"),
    "pricings": ("Pricings", "计费方式"),
    "stale_after": ("stale after {interval}", "{interval} 后过期"),
    # digests
    "digest_title": ("Daily digest", "每日变化"),
    "feed": ("Atom feed", "Atom 订阅"),
    "markdown": ("Markdown", "Markdown"),
    "day": ("Day", "日期"),
    "show": ("Show", "查看"),
    "previous_day": ("Previous day", "前一天"),
    "next_day": ("Next day", "后一天"),
    "changes": ("Price changes", "价格变化"),
    "new": ("New offers", "新增报价"),
    "withdrawn": ("Withdrawn offers", "下架报价"),
    "failed_providers": ("Failed providers", "失败的数据源"),
    "cheapest": ("Cheapest fresh offer per card and pricing", "各显卡与计费方式最便宜的有效报价"),
    "old_price": ("Before", "之前"),
    "new_price": ("After", "之后"),
    "pct": ("Change %", "变化 %"),
    "old_cny_per_gb_hour": ("¥/GB·h before", "之前 ¥/GB·h"),
    "new_cny_per_gb_hour": ("¥/GB·h after", "之后 ¥/GB·h"),
    "reason": ("Reason", "原因"),
    "not_stored": ("Built on demand (no digest was stored for this day).", "按需生成（这一天没有保存的摘要）。"),
    "partial": ("The day is not over yet: this covers it so far.", "这一天尚未结束：以下为目前为止的变化。"),
    "deliveries": ("Deliveries", "推送"),
    "target": ("Target", "目标"),
    "at": ("At (UTC)", "时间 (UTC)"),
    "nothing": ("nothing", "无"),
}

UNITS = {"minutes": ("{n} min", "{n} 分钟"), "hours": ("{n} h", "{n} 小时"), "days": ("{n} d", "{n} 天")}


class Words:
    """`t(key, **values)` in one language; `value(kind, v)` for the vocabulary's values."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._en = lang == "en"

    def __call__(self, key: str, **values: Any) -> str:
        pair = MESSAGES.get(key)
        text = (pair[0] if self._en else pair[1]) if pair else key
        return text.format(**values) if values else text

    def has(self, key: str) -> bool:
        return key in MESSAGES

    def value(self, kind: str, value: Any) -> str:
        """A vocabulary value (pricing, availability, status, unit) in this language."""
        if value is None:
            return "—"
        key = f"{kind}.{value}"
        return self(key) if key in MESSAGES else str(value)

    def flag(self, value: bool | None) -> str:
        return "—" if value is None else self("yes" if value else "no")

    def interval(self, minutes: float) -> str:
        """A schedule's interval the way people say it: 30 min, 6 h, 1 d."""
        if minutes % 1440 == 0:
            unit, n = "days", minutes / 1440
        elif minutes % 60 == 0:
            unit, n = "hours", minutes / 60
        else:
            unit, n = "minutes", minutes
        return UNITS[unit][0 if self._en else 1].format(n=f"{n:g}")
