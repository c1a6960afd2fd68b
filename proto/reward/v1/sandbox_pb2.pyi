from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TestStyle(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEST_STYLE_UNSPECIFIED: _ClassVar[TestStyle]
    TEST_STYLE_HUMANEVAL: _ClassVar[TestStyle]
    TEST_STYLE_STDIO: _ClassVar[TestStyle]
    TEST_STYLE_FUNCTION_CALL: _ClassVar[TestStyle]

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    VERDICT_ACCEPTED: _ClassVar[Verdict]
    VERDICT_WRONG_ANSWER: _ClassVar[Verdict]
    VERDICT_RUNTIME_ERROR: _ClassVar[Verdict]
    VERDICT_TIMEOUT: _ClassVar[Verdict]
    VERDICT_MEMORY_LIMIT: _ClassVar[Verdict]
    VERDICT_OUTPUT_LIMIT: _ClassVar[Verdict]
    VERDICT_COMPILE_ERROR: _ClassVar[Verdict]
    VERDICT_SANDBOX_ERROR: _ClassVar[Verdict]

class CaseOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CASE_OUTCOME_UNSPECIFIED: _ClassVar[CaseOutcome]
    CASE_OUTCOME_PASSED: _ClassVar[CaseOutcome]
    CASE_OUTCOME_FAILED: _ClassVar[CaseOutcome]
    CASE_OUTCOME_ERROR: _ClassVar[CaseOutcome]
    CASE_OUTCOME_TIMEOUT: _ClassVar[CaseOutcome]
    CASE_OUTCOME_NOT_RUN: _ClassVar[CaseOutcome]

class LimitHit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_HIT_NONE: _ClassVar[LimitHit]
    LIMIT_HIT_WALL_TIME: _ClassVar[LimitHit]
    LIMIT_HIT_CPU_TIME: _ClassVar[LimitHit]
    LIMIT_HIT_MEMORY: _ClassVar[LimitHit]
    LIMIT_HIT_OUTPUT: _ClassVar[LimitHit]
    LIMIT_HIT_FILE_SIZE: _ClassVar[LimitHit]
    LIMIT_HIT_PROCESSES: _ClassVar[LimitHit]
TEST_STYLE_UNSPECIFIED: TestStyle
TEST_STYLE_HUMANEVAL: TestStyle
TEST_STYLE_STDIO: TestStyle
TEST_STYLE_FUNCTION_CALL: TestStyle
VERDICT_UNSPECIFIED: Verdict
VERDICT_ACCEPTED: Verdict
VERDICT_WRONG_ANSWER: Verdict
VERDICT_RUNTIME_ERROR: Verdict
VERDICT_TIMEOUT: Verdict
VERDICT_MEMORY_LIMIT: Verdict
VERDICT_OUTPUT_LIMIT: Verdict
VERDICT_COMPILE_ERROR: Verdict
VERDICT_SANDBOX_ERROR: Verdict
CASE_OUTCOME_UNSPECIFIED: CaseOutcome
CASE_OUTCOME_PASSED: CaseOutcome
CASE_OUTCOME_FAILED: CaseOutcome
CASE_OUTCOME_ERROR: CaseOutcome
CASE_OUTCOME_TIMEOUT: CaseOutcome
CASE_OUTCOME_NOT_RUN: CaseOutcome
LIMIT_HIT_NONE: LimitHit
LIMIT_HIT_WALL_TIME: LimitHit
LIMIT_HIT_CPU_TIME: LimitHit
LIMIT_HIT_MEMORY: LimitHit
LIMIT_HIT_OUTPUT: LimitHit
LIMIT_HIT_FILE_SIZE: LimitHit
LIMIT_HIT_PROCESSES: LimitHit

class TestCase(_message.Message):
    __slots__ = ("stdin", "expected_stdout", "args_json", "kwargs_json", "expected_json")
    STDIN_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_STDOUT_FIELD_NUMBER: _ClassVar[int]
    ARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    KWARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_JSON_FIELD_NUMBER: _ClassVar[int]
    stdin: str
    expected_stdout: str
    args_json: str
    kwargs_json: str
    expected_json: str
    def __init__(self, stdin: _Optional[str] = ..., expected_stdout: _Optional[str] = ..., args_json: _Optional[str] = ..., kwargs_json: _Optional[str] = ..., expected_json: _Optional[str] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ("wall_s", "cpu_s", "memory_mb", "max_processes", "file_size_mb", "scratch_mb", "open_files", "output_bytes", "compile_wall_s")
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    CPU_S_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    FILE_SIZE_MB_FIELD_NUMBER: _ClassVar[int]
    SCRATCH_MB_FIELD_NUMBER: _ClassVar[int]
    OPEN_FILES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    COMPILE_WALL_S_FIELD_NUMBER: _ClassVar[int]
    wall_s: float
    cpu_s: float
    memory_mb: int
    max_processes: int
    file_size_mb: int
    scratch_mb: int
    open_files: int
    output_bytes: int
    compile_wall_s: float
    def __init__(self, wall_s: _Optional[float] = ..., cpu_s: _Optional[float] = ..., memory_mb: _Optional[int] = ..., max_processes: _Optional[int] = ..., file_size_mb: _Optional[int] = ..., scratch_mb: _Optional[int] = ..., open_files: _Optional[int] = ..., output_bytes: _Optional[int] = ..., compile_wall_s: _Optional[float] = ...) -> None: ...

class OutputCompare(_message.Message):
    __slots__ = ("float_tolerance", "ignore_trailing_whitespace", "normalize_line_endings", "mode", "checker_code", "checker_language")
    FLOAT_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    IGNORE_TRAILING_WHITESPACE_FIELD_NUMBER: _ClassVar[int]
    NORMALIZE_LINE_ENDINGS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    CHECKER_CODE_FIELD_NUMBER: _ClassVar[int]
    CHECKER_LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    float_tolerance: float
    ignore_trailing_whitespace: bool
    normalize_line_endings: bool
    mode: str
    checker_code: str
    checker_language: str
    def __init__(self, float_tolerance: _Optional[float] = ..., ignore_trailing_whitespace: _Optional[bool] = ..., normalize_line_endings: _Optional[bool] = ..., mode: _Optional[str] = ..., checker_code: _Optional[str] = ..., checker_language: _Optional[str] = ...) -> None: ...

class ExecutionRequest(_message.Message):
    __slots__ = ("id", "code", "language", "style", "check_code", "entry_point", "cases", "limits", "compare", "prompt", "files", "fetch_files", "args")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    STYLE_FIELD_NUMBER: _ClassVar[int]
    CHECK_CODE_FIELD_NUMBER: _ClassVar[int]
    ENTRY_POINT_FIELD_NUMBER: _ClassVar[int]
    CASES_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    COMPARE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FETCH_FILES_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    id: str
    code: str
    language: str
    style: TestStyle
    check_code: str
    entry_point: str
    cases: _containers.RepeatedCompositeFieldContainer[TestCase]
    limits: Limits
    compare: OutputCompare
    prompt: str
    files: _containers.ScalarMap[str, bytes]
    fetch_files: _containers.RepeatedScalarFieldContainer[str]
    args: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., code: _Optional[str] = ..., language: _Optional[str] = ..., style: _Optional[_Union[TestStyle, str]] = ..., check_code: _Optional[str] = ..., entry_point: _Optional[str] = ..., cases: _Optional[_Iterable[_Union[TestCase, _Mapping]]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., compare: _Optional[_Union[OutputCompare, _Mapping]] = ..., prompt: _Optional[str] = ..., files: _Optional[_Mapping[str, bytes]] = ..., fetch_files: _Optional[_Iterable[str]] = ..., args: _Optional[_Iterable[str]] = ...) -> None: ...

class ExecuteBatchRequest(_message.Message):
    __slots__ = ("requests",)
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[ExecutionRequest]
    def __init__(self, requests: _Optional[_Iterable[_Union[ExecutionRequest, _Mapping]]] = ...) -> None: ...

class TestResult(_message.Message):
    __slots__ = ("index", "outcome", "detail", "wall_s", "verdict", "peak_memory_mb", "stdout_head", "stderr_head")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    STDOUT_HEAD_FIELD_NUMBER: _ClassVar[int]
    STDERR_HEAD_FIELD_NUMBER: _ClassVar[int]
    index: int
    outcome: CaseOutcome
    detail: str
    wall_s: float
    verdict: Verdict
    peak_memory_mb: float
    stdout_head: str
    stderr_head: str
    def __init__(self, index: _Optional[int] = ..., outcome: _Optional[_Union[CaseOutcome, str]] = ..., detail: _Optional[str] = ..., wall_s: _Optional[float] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., peak_memory_mb: _Optional[float] = ..., stdout_head: _Optional[str] = ..., stderr_head: _Optional[str] = ...) -> None: ...

class ExecutionResult(_message.Message):
    __slots__ = ("id", "verdict", "passed", "tests", "tests_passed", "tests_total", "stdout", "stderr", "exit_code", "signal", "wall_s", "cpu_s", "peak_memory_mb", "limit_hit", "error", "backend", "compile", "files")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    TESTS_FIELD_NUMBER: _ClassVar[int]
    TESTS_PASSED_FIELD_NUMBER: _ClassVar[int]
    TESTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    CPU_S_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    LIMIT_HIT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    COMPILE_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    id: str
    verdict: Verdict
    passed: bool
    tests: _containers.RepeatedCompositeFieldContainer[TestResult]
    tests_passed: int
    tests_total: int
    stdout: str
    stderr: str
    exit_code: int
    signal: int
    wall_s: float
    cpu_s: float
    peak_memory_mb: float
    limit_hit: LimitHit
    error: str
    backend: str
    compile: CompileResult
    files: _containers.ScalarMap[str, bytes]
    def __init__(self, id: _Optional[str] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., passed: _Optional[bool] = ..., tests: _Optional[_Iterable[_Union[TestResult, _Mapping]]] = ..., tests_passed: _Optional[int] = ..., tests_total: _Optional[int] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[int] = ..., wall_s: _Optional[float] = ..., cpu_s: _Optional[float] = ..., peak_memory_mb: _Optional[float] = ..., limit_hit: _Optional[_Union[LimitHit, str]] = ..., error: _Optional[str] = ..., backend: _Optional[str] = ..., compile: _Optional[_Union[CompileResult, _Mapping]] = ..., files: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class CompileResult(_message.Message):
    __slots__ = ("exit_code", "stdout", "stderr", "wall_s", "timed_out", "signal", "cached")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    WALL_S_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool
    signal: int
    cached: bool
    def __init__(self, exit_code: _Optional[int] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., wall_s: _Optional[float] = ..., timed_out: _Optional[bool] = ..., signal: _Optional[int] = ..., cached: _Optional[bool] = ...) -> None: ...

class ExecuteBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ExecutionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ExecutionResult, _Mapping]]] = ...) -> None: ...

class ListLanguagesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LanguageInfo(_message.Message):
    __slots__ = ("name", "aliases", "available", "version", "compiled", "reason", "install_hint", "test_framework", "set", "packages")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    COMPILED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    INSTALL_HINT_FIELD_NUMBER: _ClassVar[int]
    TEST_FRAMEWORK_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    PACKAGES_FIELD_NUMBER: _ClassVar[int]
    name: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    available: bool
    version: str
    compiled: bool
    reason: str
    install_hint: str
    test_framework: bool
    set: str
    packages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., available: _Optional[bool] = ..., version: _Optional[str] = ..., compiled: _Optional[bool] = ..., reason: _Optional[str] = ..., install_hint: _Optional[str] = ..., test_framework: _Optional[bool] = ..., set: _Optional[str] = ..., packages: _Optional[_Iterable[str]] = ...) -> None: ...

class ListLanguagesResponse(_message.Message):
    __slots__ = ("languages", "backend")
    LANGUAGES_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    languages: _containers.RepeatedCompositeFieldContainer[LanguageInfo]
    backend: str
    def __init__(self, languages: _Optional[_Iterable[_Union[LanguageInfo, _Mapping]]] = ..., backend: _Optional[str] = ...) -> None: ...
