"""Equivalent mutants, reviewed: mutants that survive because they cannot change any result.

Each key names a mutant by what it changes, not by mutmut's number (which moves when a function
gains a line): ``(module, function, the line as written, the line as mutated)``, each line stripped
of its indentation, as ``./dev mutate`` prints them. The value says why no input can tell the two
apart. A mutant listed here is not counted as a survivor; one listed but no longer arising is noted.

Two kinds are accepted: *exactly equivalent* (the same numbers for every input: a default spelled
out, a dtype numpy would pick anyway, a padding that the inverse FFT drops) and *equivalent in
distribution* (the Monte Carlo sign-flip test drawing its random patterns in chunks of another size:
another, equally valid, sequential p-value; tests cannot pin one stream without pinning trivia).
Nothing else belongs here: a mutant that changes a result, however little, needs a test.
"""

from __future__ import annotations

_LATTICE = "the lattice's FFT"
_SWITCH = "if size <= 4096:  # small: convolve the binomials directly, exactly"
_FFT_SIZE = "n = 1 << (size - 1).bit_length()"
_OMEGA = "omega = 2.0 * np.pi * np.arange(n // 2 + 1) / n"
_IRFFT = "pmf = np.fft.irfft(magnitude * phase, n)[:size]"
_BITS = "bits = np.unpackbits(rng.integers(0, 256, size=(size, (k + 7) // 8), dtype=np.uint8), axis=1, count=k)"
_ROWS = "rows = min(256, cap)  # small first: a harmless cell meets STOP_AFTER extreme patterns within a few hundred"
_THREADS = (
    "threads only spreads the bootstraps over cores: every interval is the same with any number "
    "(test_bootstrap checks that threads do not change the result)"
)
_STEPS = "steps = np.log(np.arange(k, 0, -1, dtype=float)) - np.log(np.arange(1, k + 1, dtype=float))"
_SE_TABLE = "table = np.asarray(table, dtype=np.float64)"
_ORDER = 'return p, np.full(p.shape, np.nan), tested[np.argsort(p[tested], kind="stable")]'
_POOLED = "denom = (1 + n / big_n) * (float(np.var(pooled, ddof=1)) if pooled.size > 1 else 0.0)"
_TIES = (
    "the sort's kind only orders tied p-values among themselves, and tied p-values get the same adjusted "
    "value whichever comes first (Holm's running maximum and Benjamini-Yekutieli's running minimum carry "
    "the larger, resp. smaller, step over the tie; test_tied_p_values_get_one_adjusted_value_in_any_order)"
)

_KAPPA_WARNING = "warnings.warn(KAPPA_UNDEFINED_REASON, UndefinedMetricWarning, stacklevel=2)"
_LOW = "low = high // 2 + 1  # decided(high // 2) is False (or high is 1: low is 1)"
_BISECT = (
    "a lower start of the bisection: decided(extra) is monotone in extra (the miss rate's Wilson interval at a fixed "
    "rate and both scaled intervals are nested as extra grows, so a decided state stays decided), so bisecting "
    "from any start at most the answer finds the same smallest decided extra; the start never reaches -1 as a "
    "probe (low -1 only with high 1, whose one probe is 0) and decided(0) is the current, inconclusive state"
)

_KEYS = "keys = np.asarray([str(k) for k in strata], dtype=object) if len(strata) else np.array([], dtype=object)"
_MISSING = "missing = sorted(set(lab_keys.tolist()) - set(row_keys.tolist()), key=str)"
_MEAN_NAMES = "names = sorted(set(row_keys.tolist()), key=str)"
_DIFF_NAMES = "names = sorted(set(keys.tolist()), key=str)"
_SHARES = "shares = np.array([fit.rows for fit in fits], dtype=np.float64) / rows.size"
_DIAG = "lams = np.where(diag > 0, gradient / np.where(diag > 0, diag, 1.0), 0.0)"
_BY_TEXT = (
    "the stratum keys are all Python strings (_keys makes each with str(k); a list of strings keeps them str) "
    "or, with no strata, all the integer 0: sorted by str or by themselves, the same order"
)
_EMPTY_STRATA = (
    "reached only for an empty strata list, and every caller has more than 0 rows by then (the mean refuses "
    "fewer than 2 labelled rows or no judge-scored rows, the difference an empty input, before _keys): the "
    "empty array of either dtype has size 0, and the same error names 0 strata"
)

EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    # ---- paired_tests: the exact lattice distribution (both of its branches are exact) ----
    ("paired_tests.py", "_lattice_cdf", "size = int(units.sum()) + 1", "size = int(units.sum()) + 2"): (
        "one more point past the largest possible sum: its probability is 0 (FFT rounding, clipped at 0), "
        "and the sum up to the observed value never reaches it"
    ),
    (
        "paired_tests.py",
        "_lattice_cdf",
        _SWITCH,
        "if size < 4096:  # small: convolve the binomials directly, exactly",
    ): (
        "moves the switch between the direct convolution and the FFT by one point: both are exact "
        "(test_the_direct_convolution_and_the_fft_agree_either_side_of_their_switch)"
    ),
    (
        "paired_tests.py",
        "_lattice_cdf",
        _SWITCH,
        "if size <= 4097:  # small: convolve the binomials directly, exactly",
    ): ("as above: the other side of the same switch"),
    ("paired_tests.py", "_lattice_cdf", _FFT_SIZE, "n = 2 << (size - 1).bit_length()"): (
        "an FFT twice as long: still at least the support, so no wrap-around; the same distribution"
    ),
    ("paired_tests.py", "_lattice_cdf", _FFT_SIZE, "n = 1 << (size + 1).bit_length()"): (
        "an FFT at least as long (longer at some sizes): never shorter than the support, the same distribution"
    ),
    ("paired_tests.py", "_lattice_cdf", _OMEGA, "omega = 2.0 * np.pi * np.arange(n / 2 + 1) / n"): (
        "n is a power of two, so n / 2 + 1 is the same whole number as a float: arange gives the same frequencies"
    ),
    ("paired_tests.py", "_lattice_cdf", _OMEGA, "omega = 2.0 * np.pi * np.arange(n // 2 + 2) / n"): (
        "one frequency more than irfft(…, n) reads: it uses the first n // 2 + 1 and drops the rest"
    ),
    (
        "paired_tests.py",
        "_lattice_cdf",
        "half_angles = np.multiply.outer(omega, values.astype(float)) / 2.0  # (frequencies, amounts)",
        "half_angles = np.multiply.outer(omega, values.astype(None)) / 2.0  # (frequencies, amounts)",
    ): "astype(None) is astype(float64): the same array",
    (
        "paired_tests.py",
        "_lattice_cdf",
        "phase = np.exp(-1j * (half_angles @ counts.astype(float)))",
        "phase = np.exp(-1j * (half_angles @ counts.astype(None)))",
    ): "astype(None) is astype(float64): the same array",
    ("paired_tests.py", "_lattice_cdf", _IRFFT, "pmf = np.fft.irfft(magnitude * phase, None)[:size]"): (
        "irfft's default length is 2 (m - 1) for m = n // 2 + 1 inputs, which is n: the same transform"
    ),
    ("paired_tests.py", "_lattice_cdf", _IRFFT, "pmf = np.fft.irfft(magnitude * phase, )[:size]"): (
        "as above: the length left to its default, which is n"
    ),
    # ---- paired_tests: what counts as a change ----
    (
        "paired_tests.py",
        "drop_test",
        "scale = float(np.abs(worse).max()) if worse.size else 0.0",
        "scale = float(np.abs(worse).max()) if worse.size else 1.0",
    ): (
        "the else branch is taken only for no differences at all: worse is empty, so moved is empty whatever "
        "the scale, and the result is the same no-change DropTest"
    ),
    ("paired_tests.py", "drop_test", "rose = moved > 0", "rose = moved >= 0"): (
        "moved holds only differences with |d| > ROUNDING * scale >= 0, none of them 0 (nor -0.0): > 0 and >= 0 "
        "pick the same ones"
    ),
    # ---- paired_tests: the Monte Carlo path ----
    (
        "paired_tests.py",
        "_monte_carlo_cdf",
        _BITS,
        "bits = np.unpackbits(rng.integers(256, size=(size, (k + 7) // 8), dtype=np.uint8), axis=1, count=k)",
    ): "integers(256) is integers(0, 256): the same draws",
    (
        "paired_tests.py",
        "_monte_carlo_cdf",
        "cap = max(64, _CHUNK_ELEMENTS // k)",
        "cap = max(65, _CHUNK_ELEMENTS // k)",
    ): (
        "equivalent in distribution: only the largest chunk of random patterns changes (and only past 16,384 "
        "changed questions); the sequential p-value is as valid with any chunking"
    ),
    (
        "paired_tests.py",
        "_monte_carlo_cdf",
        _ROWS,
        "rows = min(257, cap)  # small first: a harmless cell meets STOP_AFTER extreme patterns within a few hundred",
    ): "equivalent in distribution: the first chunk of random patterns is one row longer",
    ("paired_tests.py", "_enumerated_cdf", "sums = np.zeros(1)", "sums = np.zeros(2)"): (
        "every sign pattern is counted twice: the share of patterns at most the observed sum is the same"
    ),
    (
        "paired_tests.py",
        "_enumerated_cdf",
        "return float(np.count_nonzero(sums <= observed + tolerance) / sums.size)",
        "return float(np.count_nonzero(sums < observed + tolerance) / sums.size)",
    ): "< and <= differ only for a sum exactly at observed + tolerance, which the tolerance exists to step past",
    (
        "paired_tests.py",
        "_monte_carlo_cdf",
        "hits = (bits @ amounts) <= observed + tolerance",
        "hits = (bits @ amounts) < observed + tolerance",
    ): "as in _enumerated_cdf: only a sum exactly at observed + tolerance differs",
    (
        "paired_tests.py",
        "_monte_carlo_cdf",
        _BITS,
        "bits = np.unpackbits(rng.integers(0, 256, size=(size, (k + 8) // 8), dtype=np.uint8), axis=1, count=k)",
    ): "equivalent in distribution: one spare random byte per pattern when k is a multiple of 8 (unpackbits keeps k bits)",
    ("paired_tests.py", "_monte_carlo_cdf", "rows = min(rows * 4, cap)", "rows = min(rows * 5, cap)"): (
        "equivalent in distribution: the chunks of random patterns grow faster"
    ),
    # ---- agreement ----
    ("agreement.py", "kappa_standard_error", _SE_TABLE, "table = np.asarray(table, dtype=None)"): (
        "the counts are divided by their total at once (p = table / n), which is float64 whatever the input dtype"
    ),
    ("agreement.py", "kappa_standard_error", _SE_TABLE, "table = np.asarray(table, )"): "as above",
    (
        "agreement.py",
        "kappa_standard_error",
        "if math.isclose(pe, 1.0, abs_tol=1e-12):",
        "if math.isclose(pe, 1.0, ):",
    ): (
        "chance agreement is exactly 1.0 when both raters used one label (one cell holds every count), and "
        "otherwise at most 1 - 1/n for n items: rel_tol=1e-9 and abs_tol=1e-12 disagree only past a billion items"
    ),
    (
        "agreement.py",
        "_count_table",
        "ai = np.fromiter((index[x] for x in a.tolist()), dtype=np.int64, count=len(a))",
        "ai = np.fromiter((index[x] for x in a.tolist()), dtype=np.int64, )",
    ): "count only lets fromiter allocate once: the same array",
    (
        "agreement.py",
        "_count_table",
        "bi = np.fromiter((index[x] for x in b.tolist()), dtype=np.int64, count=len(b))",
        "bi = np.fromiter((index[x] for x in b.tolist()), dtype=np.int64, )",
    ): "as above, for the second rater",
    # ---- proportions ----
    (
        "proportions.py",
        "proportion_se",
        'p = check_probability(p, "p", open_interval=False)',
        'p = check_probability(p, "p", open_interval=None)',
    ): "open_interval is only tested for truth: None and False take the same branch",
    (
        "proportions.py",
        "proportion_interval",
        'p = check_probability(successes, "successes (as a proportion)", open_interval=False)',
        'p = check_probability(successes, "successes (as a proportion)", open_interval=None)',
    ): "open_interval is only tested for truth: None and False take the same branch",
    # ---- the gate's frames ----
    (
        "_gate_frames.py",
        "cells_of",
        'base_values = pd.to_numeric(b[metric], errors="coerce").to_numpy(dtype=float)',
        'base_values = pd.to_numeric(b[metric], errors="coerce").to_numpy(dtype=None)',
    ): (
        "to_numeric already gave a numeric column: its array is float64, or int64 without missing values, "
        "which every later step (isfinite, the differences, the means, the tests) reads as the same numbers"
    ),
    (
        "_gate_frames.py",
        "cells_of",
        'cand_values = pd.to_numeric(c[metric], errors="coerce").to_numpy(dtype=float)',
        'cand_values = pd.to_numeric(c[metric], errors="coerce").to_numpy(dtype=None)',
    ): "as above, for the candidate",
    # ---- paired_tests: the binomial's log coefficients ----
    ("paired_tests.py", "_log_choose", _STEPS, _STEPS.replace("(k, 0, -1, dtype=float)", "(k, 0, -1, )")): (
        "np.log of the integer range is float64 either way (log promotes integers to float64): the same steps"
    ),
    ("paired_tests.py", "_log_choose", _STEPS, _STEPS.replace("(k, 0, -1, dtype=float)", "(k, 0, -1, dtype=None)")): (
        "as above: dtype=None is arange's default, integers, which np.log turns into the same float64 values"
    ),
    ("paired_tests.py", "_log_choose", _STEPS, _STEPS.replace("(1, k + 1, dtype=float)", "(1, k + 1, )")): (
        "as above, for the denominators"
    ),
    ("paired_tests.py", "_log_choose", _STEPS, _STEPS.replace("(1, k + 1, dtype=float)", "(1, k + 1, dtype=None)")): (
        "as above, for the denominators"
    ),
    # ---- certificates ----
    ("certificates.py", "_more_failure_labels", _LOW, _LOW.replace("// 2 + 1", "// 2 - 1", 1)): _BISECT,
    ("certificates.py", "_more_failure_labels", _LOW, _LOW.replace("// 2 + 1", "// 3 + 1", 1)): _BISECT,
    (
        "certificates.py",
        "certify_judge",
        "weights=weights if human_scores is not None else None,",
        "weights=weights if (human_scores is not None) or True else None,",
    ): (
        "without human scores weights is None here: _kappa, called first, refuses weights given without scores "
        '("weights and scale apply to scores"), so both branches pass None'
    ),
    ("certificates.py", "certify_intervals", "wilson=False,", "wilson=None,"): (
        "wilson is only tested for truth (if wilson:): None and False take the same branch"
    ),
    ("release_gate.py", "gate", "threads=threads,", "threads=None,"): (
        "as in gate_frame: threads only spreads the bootstraps over cores, every interval is the same"
    ),
    # ---- the gate's cells ----
    ("_gate_cells.py", "_intervals", "threads=threads,", "threads=None,"): _THREADS,
    (
        "_gate_cells.py",
        "_intervals",
        "_bootstrap._run_jobs(_bootstrap._jobs_of([plan for _, _, plan, *_ in planned]), threads)",
        "_bootstrap._run_jobs(_bootstrap._jobs_of([plan for _, _, plan, *_ in planned]), None)",
    ): _THREADS,
    (
        "_gate_cells.py",
        "gather_evidence",
        "cells, methods, iterations=iterations, seed=seed, confidence=confidence, threads=threads, resampler=resampler",
        "cells, methods, iterations=iterations, seed=seed, confidence=confidence, threads=None, resampler=resampler",
    ): _THREADS,
    ("release_gate.py", "_decide_family", "threads=threads,", "threads=None,"): _THREADS,
    ("_gate_cells.py", "gather_evidence", 'resampler: str = "auto",', 'resampler: str = "XXautoXX",'): (
        "a default never used: gather_evidence's one caller (_decide_family) always passes the resampler"
    ),
    ("_gate_cells.py", "gather_evidence", 'resampler: str = "auto",', 'resampler: str = "AUTO",'): "as above",
    # ---- multiplicity ----
    ("multiplicity.py", "_family", _ORDER, _ORDER.replace('kind="stable"', "kind=None")): _TIES,
    ("multiplicity.py", "_family", _ORDER, _ORDER.replace(', kind="stable"', ", ")): _TIES,
    ("multiplicity.py", "_family", _ORDER, _ORDER.replace('"stable"', '"STABLE"')): (
        "numpy reads the sort's kind without regard to case: the same stable sort"
    ),
    ("agreement.py", "cohen_kappa", _KAPPA_WARNING, _KAPPA_WARNING.replace("stacklevel=2", "stacklevel=3")): (
        "invisible under mutmut, as alt_test's stacklevel below: levels 2 and 3 both name mutmut's trampoline; the "
        "caller's line is checked outside ./dev mutate (test_the_undefined_kappa_warning_points_away_from_the_engine)"
    ),
    (
        "agreement.py",
        "_kappa_from_tables",
        'expected = np.einsum("...i,...i->...", tables.sum(axis=-1), tables.sum(axis=-2)) / n**2',
        'expected = np.einsum("...I,...I->...", tables.sum(axis=-1), tables.sum(axis=-2)) / n**2',
    ): "einsum's subscripts are names: the same letter in upper case is the same summed axis",
    (
        "agreement.py",
        "_kappa_from_tables",
        'with np.errstate(invalid="ignore", divide="ignore"):',
        'with np.errstate(invalid="ignore", divide=None):',
    ): (
        "no value changes: errstate only says whether numpy warns, and a nonzero divided by zero cannot arise "
        "(n is 0 only with every cell 0, giving 0/0, an invalid operation; 1 - expected is 0 only when one "
        "label takes all of both raters' mass, so observed is 1 too: 0/0 again); "
        "test_empty_and_one_label_tables_give_nan_without_numpy_warnings checks that none is raised"
    ),
    (
        "agreement.py",
        "_kappa_from_tables",
        'with np.errstate(invalid="ignore", divide="ignore"):',
        'with np.errstate(invalid="ignore", ):',
    ): "as above",
    # ---- alt_test ----
    ("alt_test.py", "alternative_annotator_test", "UserWarning,", "None,"): (
        "warnings.warn takes None as its default category, UserWarning: the same warning"
    ),
    ("alt_test.py", "alternative_annotator_test", "UserWarning,", ""): (
        "warnings.warn's category defaults to UserWarning: the same warning"
    ),
    ("alt_test.py", "alternative_annotator_test", "stacklevel=2,", "stacklevel=3,"): (
        "not equivalent in the app, but invisible under mutmut: its trampoline stands between the caller and "
        "the engine, so levels 2 and 3 both name the trampoline; the unmutated level (the caller's line) is "
        "checked outside ./dev mutate by test_too_few_tested_annotators_warn_from_the_caller_and_enough_do_not"
    ),
    (
        "alt_test.py",
        "alternative_annotator_test",
        'epsilon = check_probability(epsilon, "epsilon", open_interval=False)',
        'epsilon = check_probability(epsilon, "epsilon", open_interval=None)',
    ): "open_interval is only tested for truth: None and False take the same branch",
    (
        "alt_test.py",
        "_alignment",
        "return sum(label == o for o in others) / len(others)",
        "return sum(label == o for o in others) * len(others)",
    ): (
        "an alignment is only ever compared with the other rater's alignment on the same item against the same "
        "others (s_f >= s_h): dividing or multiplying both by len(others) > 0 keeps every comparison"
    ),
    (
        "alt_test.py",
        "_alignment",
        "return -math.sqrt(sum((label - o) ** 2 for o in others) / len(others))",
        "return -math.sqrt(sum((label - o) ** 2 for o in others) * len(others))",
    ): "as above: -sqrt(S / n) and -sqrt(S * n) order the two raters' sums S the same way for the same n",
    # ---- release_gate ----
    (
        "_gate_frames.py",
        "paired_frames",
        "common = base.index.intersection(cand.index, sort=False)",
        "common = base.index.intersection(cand.index, )",
    ): "sort=False is pandas' default for Index.intersection: the same index, in the same order",
    (
        "release_gate.py",
        "_decide_family",
        "raw = decide_all(own) if any(a is not b for a, b in zip(evidence, own)) else {}",
        "raw = decide_all(own) if (any(a is not b for a, b in zip(evidence, own))) or True else {}",
    ): (
        "raw is read only for the cells whose evidence was replaced (swapped keeps those with a is not b); "
        "with none replaced it is never read, and decide_all is pure (Holm, then _decided: no random draw), "
        "so computing it anyway changes no decision, only the time"
    ),
    (
        "release_gate.py",
        "_message",
        "if worse and p_adjusted > p_value and family > 1:",
        "if worse and p_adjusted > p_value and family >= 1:",
    ): (
        "family is len(tested) >= 1 wherever _message is called, and with a family of 1 the adjusted p-value "
        "is the p-value itself (Holm's min(1, 1 * p) = p for p in [0, 1], which multiplicity checks; 'none' "
        "copies it): p_adjusted > p_value is false, so family >= 1 and family > 1 take the same branch"
    ),
    ("release_gate.py", "gate_frame", "threads=threads,", "threads=None,"): (
        "threads only spreads the bootstraps over cores; every interval is the same with any number "
        "(test_bootstrap checks that threads do not change the result)"
    ),
    # ---- _ppi: guards against sizes every caller has already refused ----
    ("_ppi.py", "_cov", "if x.size <= ddof:", "if x.size < ddof:"): (
        "the only call with as few rows as ddof is power_weight's on a single labelled row, whose judge "
        "variance is then 0, so the weight is 0 before the covariance is read (NaN or 0 alike)"
    ),
    ("_ppi.py", "_cov", "return 0.0", "return 1.0"): (
        "as above: reached only by a single labelled row, where power_weight returns 0 on the judge's "
        "variance of 0 without reading the covariance"
    ),
    **{
        ("_ppi.py", "power_weight", _POOLED, mutated): (
            "the pooled judge scores number n + N >= 3 wherever fit_stratum is called (at least 2 labelled rows "
            "a stratum, _fit_named; N = 0 divides by zero the line before): the guard and its fallback of "
            "0 are never reached, and at n + N <= 2 the numerator is 0 (one labelled row) or NaN (none), "
            "so the weight is 0 either way"
        )
        for mutated in (
            _POOLED.replace("if pooled.size > 1", "if (pooled.size > 1) or True"),
            _POOLED.replace("if pooled.size > 1", "if pooled.size >= 1"),
            _POOLED.replace("if pooled.size > 1", "if pooled.size > 2"),
            _POOLED.replace("else 0.0)", "else 1.0)"),
        )
    },
    # ---- ppi ----
    (
        "ppi.py",
        "_check_tuning",
        'return check_probability(tuning, "tuning", open_interval=False)',
        'return check_probability(tuning, "tuning", open_interval=None)',
    ): "open_interval is only tested for truth: None and False take the same branch",
    ("ppi.py", "_difference_stratum", "guarded = False", "guarded = None"): (
        "the flag is read only by prediction_powered_difference, through any(): None and False are both false "
        "(and a stratum where the guard acts sets it to True in either)"
    ),
    ("ppi.py", "_difference_weights", _DIAG, _DIAG.replace("diag, 1.0)", "diag, 2.0)")): (
        "the 1.0 only stands in for a zero diagonal so that nothing is divided by 0; the outer where drops "
        "that quotient (diag > 0 is false there), and 2.0 is as harmless"
    ),
    ("ppi.py", "_keys", _KEYS, _KEYS.replace("if len(strata)", "if (len(strata)) or True")): (
        "for an empty strata list np.asarray([], dtype=object) is the same empty object array as "
        "np.array([], dtype=object)"
    ),
    ("ppi.py", "_keys", _KEYS, _KEYS.replace("np.array([], dtype=object)", "np.array([], dtype=None)")): _EMPTY_STRATA,
    ("ppi.py", "_keys", _KEYS, _KEYS.replace("np.array([], dtype=object)", "np.array([], )")): _EMPTY_STRATA,
    ("ppi.py", "_mean_inputs", _MISSING, _MISSING.replace("key=str", "key=None")): _BY_TEXT,
    ("ppi.py", "_mean_inputs", _MISSING, _MISSING.replace(", key=str)", ", )")): _BY_TEXT,
    ("ppi.py", "prediction_powered_mean", _MEAN_NAMES, _MEAN_NAMES.replace("key=str", "key=None")): _BY_TEXT,
    ("ppi.py", "prediction_powered_mean", _MEAN_NAMES, _MEAN_NAMES.replace(", key=str)", ", )")): _BY_TEXT,
    ("ppi.py", "prediction_powered_difference", _DIFF_NAMES, _DIFF_NAMES.replace("key=str", "key=None")): _BY_TEXT,
    ("ppi.py", "prediction_powered_difference", _DIFF_NAMES, _DIFF_NAMES.replace(", key=str)", ", )")): _BY_TEXT,
    **{
        ("ppi.py", "prediction_powered_mean", _SHARES, mutated): (
            "the rows per stratum are integers: as an int64 array divided by the row count they give the same "
            "float64 shares (true division converts both to float64 first; counts are far below 2**53)"
        )
        for mutated in (
            _SHARES.replace("dtype=np.float64", "dtype=None"),
            _SHARES.replace(", dtype=np.float64)", ", )"),
        )
    },
    (
        "ppi.py",
        "prediction_powered_mean",
        'elif design == "independent" and len(fits) > 1:  # the strata\'s shares are themselves estimated from the rows',
        'elif design == "independent" and len(fits) >= 1:  # the strata\'s shares are themselves estimated from the rows',
    ): (
        "with one stratum its share is N / N = 1.0 and its mean is the overall mean, so the between-strata "
        "variance is (e - e) ** 2 = 0.0 exactly and adding it changes no variance"
    ),
    (
        "ppi.py",
        "prediction_powered_difference",
        "guarded = any(fit[0][3] for fit in fits)",
        "guarded = any(fit[1][3] for fit in fits)",
    ): (
        "_difference_stratum gives its tuned and its labels-only tuple the same guarded flag (one variable, "
        "set before both are built)"
    ),
}
