// The source tree's sql/ folder, compiled in here only (see bench_common.hpp: bench::sql_dir).
namespace bench {

const char* sql_dir() {
    return SQLOCK_BENCH_SQL_DIR;
}

} // namespace bench
