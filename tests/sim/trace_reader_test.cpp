// Tests of the trace readers: each format on a small excerpt written here, the real traces in
// ../shared/traces (row counts and units), format detection, and malformed input of every kind
// (the error names file:line:column and the column; skip mode counts).
#include "sim/trace/trace_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/rng.h"
#include "sim/trace/csv_row.h"
#include "sim/trace/csv_table.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kTraces = "../shared/traces";

class TraceReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tessera_trace_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes `content` byte for byte to a file in the test's directory.
  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  fs::path dir_;
};

void SkipWithoutTraces() {
  if (!fs::exists(kTraces)) GTEST_SKIP() << kTraces << " is not here";
}

// ---- the formats, on excerpts ------------------------------------------------------------

TEST_F(TraceReaderTest, ListsFormats) {
  EXPECT_THAT(TraceFormats(), ElementsAre("openb-pods", "itp", "muri", "philly", "sacct", "csv"));
}

TEST_F(TraceReaderTest, OpenbPods) {
  const std::string path = Write(
      "openb_pod_list_x.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
      "openb-pod-0001,6000,12288,1,460,,BE,Running,427061,12902960,427061\n"
      "openb-pod-0002,88000,327680,8,1000,V100M16|V100M32,Burstable,Succeeded,9437497,10769854,"
      "9437500\n"
      "openb-pod-0003,4000,8192,0,0,,BE,Failed,100,200,150\n"
      "openb-pod-0004,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"
      "openb-pod-0005,1000,1024,1,1000,nan,LS,Failed,500,400,450\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "openb-pods");
  EXPECT_EQ(trace->path, path);
  ASSERT_EQ(trace->jobs.size(), 6u);
  const TraceJob& whole = trace->jobs[0];
  EXPECT_EQ(whole.id, "openb-pod-0000");
  EXPECT_EQ(whole.gpus, 1);
  EXPECT_EQ(whole.gpu_milli, 1000);
  EXPECT_EQ(whole.cpu_milli, 12000);
  EXPECT_EQ(whole.memory_mib, 16384);
  EXPECT_EQ(whole.submit, 0);
  EXPECT_EQ(whole.duration, 12537496 * kSecond);
  EXPECT_EQ(whole.qos, "LS");
  EXPECT_EQ(whole.status, "Running");
  EXPECT_TRUE(whole.gpu_models.empty());

  const TraceJob& share = trace->jobs[1];
  EXPECT_EQ(share.gpus, 1);
  EXPECT_EQ(share.gpu_milli, 460);
  EXPECT_EQ(share.submit, 427061 * kSecond);
  EXPECT_EQ(share.duration, (12902960 - 427061) * kSecond);

  const TraceJob& gang = trace->jobs[2];
  EXPECT_EQ(gang.gpus, 8);
  EXPECT_EQ(gang.gpu_milli, 1000);
  EXPECT_THAT(gang.gpu_models, ElementsAre("V100M16", "V100M32"));
  EXPECT_EQ(gang.duration, (10769854 - 9437500) * kSecond);  // deletion - scheduled

  const TraceJob& cpu_only = trace->jobs[3];
  EXPECT_EQ(cpu_only.gpus, 0);
  EXPECT_EQ(cpu_only.gpu_milli, 0);

  const TraceJob& pending = trace->jobs[4];  // never scheduled: no run time
  EXPECT_EQ(pending.status, "Pending");
  EXPECT_EQ(pending.submit, 10001278 * kSecond);
  EXPECT_EQ(pending.duration, 0);

  const TraceJob& backwards = trace->jobs[5];  // deletion before scheduling: not sane
  EXPECT_EQ(backwards.duration, 0);
  EXPECT_TRUE(backwards.gpu_models.empty());  // "nan" is pandas' empty cell
}

TEST_F(TraceReaderTest, OpenbPodsWithoutTimes) {
  // The multigpuNN variants have only the five resource columns.
  const std::string path = Write("multigpu.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                 "openb-pod-0000,12000,16384,1,1000\n"
                                 "openb-pod-0001,6000,12288,2,1000\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "openb-pods");
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->jobs[1].gpus, 2);
  EXPECT_EQ(trace->jobs[1].submit, 0);
  EXPECT_EQ(trace->jobs[1].duration, 0);
}

TEST_F(TraceReaderTest, Itp) {
  // The published files have no newline after the last row.
  const std::string path = Write("cluster99.csv",
                                 "job_id,submission_time,duration,num_gpu\n"
                                 "c9c620ea,5810,288476,16\n"
                                 "be631d51,5813.5,600,1");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "itp");
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->jobs[0].id, "c9c620ea");
  EXPECT_EQ(trace->jobs[0].submit, 5810 * kSecond);
  EXPECT_EQ(trace->jobs[0].duration, 288476 * kSecond);
  EXPECT_EQ(trace->jobs[0].gpus, 16);
  EXPECT_EQ(trace->jobs[0].gpu_milli, 1000);
  EXPECT_EQ(trace->jobs[1].submit, 5813500);  // fractional seconds kept to the millisecond
}

TEST_F(TraceReaderTest, MuriTimesAreMilliseconds) {
  // CRLF line endings, as in the published files.
  const std::string path =
      Write("trace9.csv",
            "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,"
            "iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\r\n"
            "0,1,0,5853661,dqn,128,2868294000,46122000,490,446,8,0,1\r\n"
            "1,8,201694000,8787693,vgg16,128,4472936000,201694000,509,435,8,0.5,0\r\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "muri");
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->jobs[0].duration, 2868294000);  // ms stays ms
  EXPECT_EQ(trace->jobs[0].model_name, "dqn");
  EXPECT_EQ(trace->jobs[0].iterations, 5853661);
  EXPECT_EQ(trace->jobs[1].id, "1");
  EXPECT_EQ(trace->jobs[1].gpus, 8);
  EXPECT_EQ(trace->jobs[1].submit, 201694000);
  EXPECT_EQ(trace->jobs[1].model_name, "vgg16");
}

TEST_F(TraceReaderTest, PhillySubmitIsRunningSumOfIntervals) {
  const std::string path =
      Write("philly.csv",
            "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\r\n"
            "0,1,1,0,1,0,1389243,0,Killed\r\n"
            "1,2,8,0,4,395146,14405,0,Failed\r\n"
            "2,3,1,2,1,257893,66336,0,Pass\r\n"
            "3,3,1,0,1,0,1042044,0,Killed\r\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "philly");
  ASSERT_EQ(trace->jobs.size(), 4u);
  EXPECT_EQ(trace->jobs[0].submit, 0);
  EXPECT_EQ(trace->jobs[1].submit, 395146 * kSecond);
  EXPECT_EQ(trace->jobs[2].submit, (395146 + 257893) * kSecond);
  EXPECT_EQ(trace->jobs[3].submit, (395146 + 257893) * kSecond);
  EXPECT_EQ(trace->jobs[1].user, "2");
  EXPECT_EQ(trace->jobs[1].gpus, 8);
  EXPECT_EQ(trace->jobs[1].nodes, 4);
  EXPECT_EQ(trace->jobs[1].status, "Failed");
  EXPECT_EQ(trace->jobs[1].duration, 14405 * kSecond);
  EXPECT_EQ(trace->jobs[2].cpu_milli, 2000);
  EXPECT_EQ(trace->jobs[0].cpu_milli, 0);
}

TEST_F(TraceReaderTest, GenericCsv) {
  // A byte order mark, CRLF, a blank line, quoted fields with a comma and a doubled quote,
  // blanks around fields, and fractional GPUs.
  const std::string path = Write("mine.csv",
                                 "\xEF\xBB\xBFsubmit_time,gpus,duration,user,gpu_model\r\n"
                                 "0,8,3600,alice,H100|H200\r\n"
                                 "\r\n"
                                 "1.5, 0.5 ,60,\"smith, j\",\r\n"
                                 "10,0.25,60,\"say \"\"hi\"\"\",A100\r\n"
                                 "20,0,5,,\r\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "csv");
  ASSERT_EQ(trace->jobs.size(), 4u);
  const auto& j = trace->jobs;
  EXPECT_EQ(j[0].id, "2");  // the line number when there is no id column
  EXPECT_EQ(j[0].gpus, 8);
  EXPECT_EQ(j[0].gpu_milli, 1000);
  EXPECT_EQ(j[0].duration, kHour);
  EXPECT_THAT(j[0].gpu_models, ElementsAre("H100", "H200"));
  EXPECT_EQ(j[1].id, "4");
  EXPECT_EQ(j[1].submit, 1500);
  EXPECT_EQ(j[1].gpus, 1);
  EXPECT_EQ(j[1].gpu_milli, 500);
  EXPECT_EQ(j[1].user, "smith, j");
  EXPECT_TRUE(j[1].gpu_models.empty());
  EXPECT_EQ(j[2].gpu_milli, 250);
  EXPECT_EQ(j[2].user, "say \"hi\"");
  EXPECT_EQ(j[3].gpus, 0);
  EXPECT_EQ(j[3].gpu_milli, 0);
}

TEST_F(TraceReaderTest, GenericCsvOptionalColumnsInAnyOrder) {
  const std::string path = Write("mine.csv",
                                 "ID,Duration,GPUs,Submit_Time,cpu_milli,memory_mib\n"
                                 "train-1,100,2,7,4000,8192\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 1u);
  EXPECT_EQ(trace->jobs[0].id, "train-1");
  EXPECT_EQ(trace->jobs[0].submit, 7 * kSecond);
  EXPECT_EQ(trace->jobs[0].gpus, 2);
  EXPECT_EQ(trace->jobs[0].cpu_milli, 4000);
  EXPECT_EQ(trace->jobs[0].memory_mib, 8192);
}

TEST_F(TraceReaderTest, GenericCsvTopologyColumns) {
  const std::string path = Write("gangs.csv",
                                 "submit_time,gpus,duration,require,prefer\n"
                                 "0,1024,3600,spine,leaf\n"
                                 "5,64,60,,leaf\n"
                                 "9,1,60,,\n");
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 3u);
  EXPECT_EQ(trace->jobs[0].require, "spine");
  EXPECT_EQ(trace->jobs[0].prefer, "leaf");
  EXPECT_EQ(trace->jobs[1].require, "");
  EXPECT_EQ(trace->jobs[1].prefer, "leaf");
  EXPECT_EQ(trace->jobs[2].prefer, "");
  auto bad = ReadTrace(Write("bad.csv", "submit_time,gpus,duration,prefer\n0,8,1,Leaf 2\n"));
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message,
              HasSubstr("bad.csv:2:4: column 'prefer': 'Leaf 2' is not a topology level name"));
}

// An elastic range for a gang of whole nodes; max_workers defaults to min_workers and may not be
// below it.
TEST_F(TraceReaderTest, GenericCsvElasticColumns) {
  auto trace = ReadTrace(Write("elastic.csv",
                               "submit_time,gpus,duration,min_workers,max_workers\n"
                               "0,32,60,2,4\n5,16,60,2,\n9,1,60,,\n"));
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 3u);
  EXPECT_EQ(trace->jobs[0].min_workers, 2);
  EXPECT_EQ(trace->jobs[0].max_workers, 4);
  EXPECT_EQ(trace->jobs[1].max_workers, 2);
  EXPECT_EQ(trace->jobs[2].min_workers, 0);
  auto bad = ReadTrace(
      Write("bad.csv", "submit_time,gpus,duration,min_workers,max_workers\n0,32,60,4,2\n"));
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message,
              HasSubstr("bad.csv:2:5: column 'max_workers': smaller than min_workers (4)"));
}

TEST_F(TraceReaderTest, GenericCsvRejectsUnknownColumn) {
  const std::string path = Write("mine.csv", "submit_time,gpus,duration,gpu_modle\n0,1,1,A100\n");
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr(path + ":1:4: column 'gpu_modle'"));
  EXPECT_THAT(trace.error().message, HasSubstr("not a column of format 'csv'"));
}

TEST_F(TraceReaderTest, GenericCsvRejectsFractionAboveOne) {
  const std::string path = Write("mine.csv", "submit_time,gpus,duration\n0,2.5,1\n");
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr(path + ":2:2: column 'gpus'"));
}

TEST_F(TraceReaderTest, HeaderOnlyIsAnEmptyTrace) {
  auto trace = ReadTrace(Write("h.csv", "job_id,submission_time,duration,num_gpu\n"));
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_TRUE(trace->jobs.empty());
}

// ---- choosing the format -----------------------------------------------------------------

TEST_F(TraceReaderTest, UnknownHeaderListsKnownFormats) {
  const std::string path = Write("what.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n1,2,3\n");
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_EQ(trace.error().code, Error::Code::kInvalidArgument);
  EXPECT_THAT(trace.error().message, HasSubstr(path + ":1: unknown trace format"));
  for (const auto& f : TraceFormats()) EXPECT_THAT(trace.error().message, HasSubstr(f));
}

TEST_F(TraceReaderTest, ForcedFormatMustFitTheHeader) {
  const std::string path = Write("mine.csv", "submit_time,gpus,duration\n0,1,1\n");
  TraceReadOptions options;
  options.format = "itp";
  auto trace = ReadTrace(path, options);
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr("lacks column 'job_id'"));
  EXPECT_THAT(trace.error().message, HasSubstr("'itp'"));

  options.format = "csv";
  trace = ReadTrace(path, options);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "csv");
}

TEST_F(TraceReaderTest, ForcedFormatMustBeKnown) {
  TraceReadOptions options;
  options.format = "slurm";
  auto trace = ReadTrace(Write("x.csv", "a\n"), options);
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr("unknown trace format 'slurm'"));
  EXPECT_THAT(trace.error().message, HasSubstr("openb-pods, itp, muri, philly, sacct, csv"));
}

TEST_F(TraceReaderTest, DuplicateHeaderColumn) {
  auto trace = ReadTrace(Write("d.csv", "job_id,submission_time,duration,num_gpu,duration\n"));
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr(":1:3: column 'duration': appears twice"));
}

// ---- files that are not there or not traces ----------------------------------------------

TEST_F(TraceReaderTest, MissingFile) {
  const std::string path = (dir_ / "nope.csv").string();
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_EQ(trace.error().code, Error::Code::kNotFound);
  EXPECT_EQ(trace.error().message, path + ": no such file");
}

TEST_F(TraceReaderTest, Directory) {
  auto trace = ReadTrace(dir_.string());
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr("is a directory"));
}

TEST_F(TraceReaderTest, EmptyFile) {
  for (const std::string content : {"", "\n\n", "\r\n  \r\n"}) {
    const std::string path = Write("empty.csv", content);
    auto trace = ReadTrace(path);
    ASSERT_FALSE(trace);
    EXPECT_THAT(trace.error().message, HasSubstr(path + ": empty file"));
  }
}

TEST_F(TraceReaderTest, BinaryJunkIsAnErrorNotACrash) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919) % 256);
  auto trace = ReadTrace(Write("junk.bin", junk));
  ASSERT_FALSE(trace);
  EXPECT_EQ(trace.error().code, Error::Code::kInvalidArgument);
}

// ---- malformed rows ----------------------------------------------------------------------

struct BadRow {
  std::string row;       // the third line of an ITP file
  std::string location;  // expected ":LINE:COLUMN: column 'NAME'"
  std::string reason;    // expected in the message
};

class MalformedRowTest : public TraceReaderTest, public ::testing::WithParamInterface<BadRow> {};

TEST_P(MalformedRowTest, StopsTheReadWithLocation) {
  const BadRow& bad = GetParam();
  const std::string path = Write("cluster.csv",
                                 "job_id,submission_time,duration,num_gpu\n"
                                 "a,1,2,3\n" +
                                     bad.row + "\n" + "c,1,2,3\n");
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace) << bad.row;
  EXPECT_EQ(trace.error().code, Error::Code::kInvalidArgument);
  EXPECT_THAT(trace.error().message, HasSubstr(path + bad.location));
  EXPECT_THAT(trace.error().message, HasSubstr(bad.reason));

  TraceReadOptions skip;
  skip.skip_bad_rows = true;
  trace = ReadTrace(path, skip);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->skipped_rows, 1);
  ASSERT_EQ(trace->skip_reasons.size(), 1u);
  EXPECT_THAT(trace->skip_reasons[0], HasSubstr(path + bad.location));
}

INSTANTIATE_TEST_SUITE_P(
    Rows, MalformedRowTest,
    ::testing::Values(
        BadRow{"b,1,2", ":3:4: column 'num_gpu'", "missing: the row has 3 fields, the header 4"},
        BadRow{"b,1,2,3,4", ":3:5: ", "too many fields"},
        BadRow{"b,1,2,x3", ":3:4: column 'num_gpu'", "'x3' is not a number"},
        BadRow{"b,-1,2,3", ":3:2: column 'submission_time'", "must not be negative"},
        BadRow{"b,1,-2,3", ":3:3: column 'duration'", "must not be negative"},
        BadRow{"b,1,2,200000", ":3:4: column 'num_gpu'", "too large (at most 100000)"},
        BadRow{"b,nan,2,3", ":3:2: column 'submission_time'", "is NaN"},
        BadRow{"b,1,inf,3", ":3:3: column 'duration'", "is infinite"},
        BadRow{"b,1,1e400,3", ":3:3: column 'duration'", "out of range"},
        BadRow{"b,1,2,", ":3:4: column 'num_gpu'", "required field is empty"},
        BadRow{",1,2,3", ":3:1: column 'job_id'", "required field is empty"},
        BadRow{"b,1,2,2.5", ":3:4: column 'num_gpu'", "not a whole number"},
        BadRow{"b,1,2,99999999999999999999", ":3:4: column 'num_gpu'", "out of range"},
        BadRow{"b\xff\xfe,1,2,3", ":3:1: column 'job_id'", "not valid UTF-8"},
        BadRow{"b,1,\xc0\xaf,3", ":3:3: column 'duration'", "not valid UTF-8"},
        BadRow{"b\x01,1,2,3", ":3:1: column 'job_id'", "control byte 0x01"},
        BadRow{"b,\"1,2,3", ":3:2: column 'submission_time'", "unterminated quoted field"},
        BadRow{"b,\"1\"x,2,3", ":3:2: column 'submission_time'", "after a closing quote"},
        BadRow{"b,1e12,2,3", ":3:2: column 'submission_time'", "too large"}));

TEST_F(TraceReaderTest, SkipModeCountsAndKeepsGoodRows) {
  const std::string path = Write("openb.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                 "p0,1000,1024,1,1000\n"
                                 "p1,1000,1024,1,0\n"     // a GPU pod with no GPU share
                                 "p2,1000,1024,1,1001\n"  // more than a whole GPU
                                 "p3,1000,1024,one,1000\n"
                                 "p4,1000,1024,2,1000\n");
  auto strict = ReadTrace(path);
  ASSERT_FALSE(strict);
  EXPECT_THAT(strict.error().message,
              HasSubstr(path + ":3:5: column 'gpu_milli': must be 1..1000"));

  TraceReadOptions skip;
  skip.skip_bad_rows = true;
  auto trace = ReadTrace(path, skip);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->jobs[0].id, "p0");
  EXPECT_EQ(trace->jobs[1].id, "p4");
  EXPECT_EQ(trace->skipped_rows, 3);
  ASSERT_EQ(trace->skip_reasons.size(), 3u);
  EXPECT_THAT(trace->skip_reasons[1], HasSubstr(":4:5: column 'gpu_milli'"));
  EXPECT_THAT(trace->skip_reasons[2], HasSubstr(":5:4: column 'num_gpu'"));
}

TEST_F(TraceReaderTest, SkipModeKeepsReasonsBounded) {
  std::string content = "submit_time,gpus,duration\n";
  for (int i = 0; i < 50; ++i) content += "x,1,1\n";
  content += "1,1,1\n";
  TraceReadOptions skip;
  skip.skip_bad_rows = true;
  auto trace = ReadTrace(Write("many.csv", content), skip);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->jobs.size(), 1u);
  EXPECT_EQ(trace->skipped_rows, 50);
  EXPECT_EQ(static_cast<int>(trace->skip_reasons.size()), Trace::kMaxSkipReasons);
}

TEST_F(TraceReaderTest, PhillySkippedRowStillAdvancesTheClock) {
  const std::string path =
      Write("philly.csv",
            "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n"
            "0,1,1,0,1,10,5,0,Pass\n"
            "1,2,bad,0,1,20,5,0,Pass\n"
            "2,3,1,0,1,30,5,0,Pass\n");
  TraceReadOptions skip;
  skip.skip_bad_rows = true;
  auto trace = ReadTrace(path, skip);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->skipped_rows, 1);
  EXPECT_EQ(trace->jobs[1].submit, 60 * kSecond);
}

TEST_F(TraceReaderTest, PhillyClockCannotOverflow) {
  std::string content =
      "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n";
  for (int i = 0; i < 3; ++i) content += "0,1,1,0,1,60000000000,5,0,Pass\n";
  const std::string path = Write("philly.csv", content);
  auto trace = ReadTrace(path);
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr(path + ":3:6: column 'interval': the running"));
}

// Random damage to a good file must give an Error or a Trace, never a crash or a throw.
TEST_F(TraceReaderTest, DamagedFilesNeverCrash) {
  const std::string good =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
      "openb-pod-0001,6000,12288,1,460,\"G2|T4\",BE,Running,427061,12902960,427061\n"
      "openb-pod-0003,4000,8192,0,0,,BE,Failed,100,200,150\r\n";
  // Spelled with its length: the NUL byte is one of the characters.
  const std::string alphabet(",\"\r\n|.-e0123456789 \x00\xff\xc3", 22);
  Rng rng(42);
  int loaded = 0;
  for (int round = 0; round < 500; ++round) {
    std::string text = good;
    const int edits = 1 + static_cast<int>(rng.Uniform(6));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng.Uniform(text.size());
      switch (rng.Uniform(3)) {
        case 0:
          text[at] = alphabet[rng.Uniform(alphabet.size())];
          break;
        case 1:
          text.erase(at, 1 + rng.Uniform(8));
          break;
        default:
          text.insert(at, 1, alphabet[rng.Uniform(alphabet.size())]);
          break;
      }
      if (text.empty()) text = "x";
    }
    const std::string path = Write("damaged.csv", text);
    for (bool skip : {false, true}) {
      TraceReadOptions options;
      options.skip_bad_rows = skip;
      auto trace = ReadTrace(path, options);
      if (trace) {
        ++loaded;
        for (const auto& j : trace->jobs) {
          EXPECT_GE(j.gpus, 0);
          EXPECT_GE(j.submit, 0);
          EXPECT_GE(j.duration, 0);
          EXPECT_LE(j.gpu_milli, 1000);
        }
      } else {
        EXPECT_FALSE(trace.error().message.empty());
      }
    }
  }
  EXPECT_GT(loaded, 0);
}

// ---- the pieces ------------------------------------------------------------------------

TEST(CsvTableTest, SplitsQuotedFields) {
  std::vector<std::string> f;
  EXPECT_FALSE(SplitCsvLine("a, b ,\"c,d\",\"e\"\"f\",", &f));
  EXPECT_THAT(f, ElementsAre("a", "b", "c,d", "e\"f", ""));
  EXPECT_FALSE(SplitCsvLine("", &f));
  EXPECT_THAT(f, ElementsAre(""));
  auto err = SplitCsvLine("a,\"b", &f);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->column, 2);
}

TEST(CsvTableTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(
      IsValidUtf8("Gr\xC3\xBC\xC3\x9F"
                  "e \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));
}

TEST(CsvTableTest, Numbers) {
  EXPECT_EQ(ParseWholeNumber("42").value(), 42);
  EXPECT_EQ(ParseWholeNumber("+42").value(), 42);
  EXPECT_EQ(ParseWholeNumber("8.0").value(), 8);
  EXPECT_EQ(ParseWholeNumber("1e3").value(), 1000);
  EXPECT_FALSE(ParseWholeNumber("8.5"));
  EXPECT_FALSE(ParseWholeNumber("0x10"));
  EXPECT_FALSE(ParseWholeNumber("--1"));
  EXPECT_FALSE(ParseWholeNumber(""));
  EXPECT_DOUBLE_EQ(ParseNumber("0.5").value(), 0.5);
  EXPECT_EQ(ParseNumber("NaN").error(), "is NaN");
  EXPECT_EQ(ParseNumber("-inf").error(), "is infinite");
  EXPECT_FALSE(ParseNumber("1,5"));
}

// ---- the real traces ---------------------------------------------------------------------

TEST_F(TraceReaderTest, RealOpenbDefault) {
  SkipWithoutTraces();
  auto trace = ReadTrace(kTraces + "/alibaba-openb-2023/openb_pod_list_default.csv");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "openb-pods");
  EXPECT_EQ(trace->jobs.size(), 8152u);
  EXPECT_EQ(trace->skipped_rows, 0);
  int shares = 0;
  int cpu_only = 0;
  int pending = 0;
  for (const auto& j : trace->jobs) {
    if (j.gpus == 1 && j.gpu_milli < 1000) ++shares;
    if (j.gpus == 0) ++cpu_only;
    if (j.status == "Pending") {
      ++pending;
      EXPECT_EQ(j.duration, 0) << j.id;
    }
  }
  EXPECT_EQ(shares, 3078);
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(pending, 897);
  EXPECT_EQ(trace->jobs[1].id, "openb-pod-0001");
  EXPECT_EQ(trace->jobs[1].gpu_milli, 460);
  EXPECT_EQ(trace->jobs[1].submit, 427061 * kSecond);
}

TEST_F(TraceReaderTest, RealOpenbVariantsAllRead) {
  SkipWithoutTraces();
  int files = 0;
  bool saw_spec = false;
  for (const auto& entry : fs::directory_iterator(kTraces + "/alibaba-openb-2023")) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("openb_pod_list_")) continue;
    ++files;
    auto trace = ReadTrace(entry.path().string());
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->format, "openb-pods");
    EXPECT_GT(trace->jobs.size(), 7000u) << name;
    if (name == "openb_pod_list_gpuspec33.csv") {
      for (const auto& j : trace->jobs) saw_spec = saw_spec || !j.gpu_models.empty();
    }
  }
  EXPECT_EQ(files, 24);  // the default list and its 23 variants
  EXPECT_TRUE(saw_spec);
}

TEST_F(TraceReaderTest, RealItp) {
  SkipWithoutTraces();
  const std::vector<std::pair<std::string, std::size_t>> counts = {
      {"cluster01", 1595},  {"cluster02", 5778},  {"cluster04", 15802}, {"cluster05", 3629},
      {"cluster07", 12699}, {"cluster09", 11134}, {"cluster10", 260}};
  for (const auto& [name, count] : counts) {
    auto trace = ReadTrace(kTraces + "/microsoft-itp-2021/" + name + ".csv");
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->format, "itp");
    EXPECT_EQ(trace->jobs.size(), count) << name;
  }
  auto c4 = ReadTrace(kTraces + "/microsoft-itp-2021/cluster04.csv");
  ASSERT_TRUE(c4);
  EXPECT_EQ(c4->jobs[0].id, "c9c620ea-4336-c1a9-8abe-e26bd13076b8");
  EXPECT_EQ(c4->jobs[0].submit, 5810 * kSecond);
  EXPECT_EQ(c4->jobs[0].duration, 288476 * kSecond);
  EXPECT_EQ(c4->jobs[0].gpus, 16);
  int max_gpus = 0;
  for (const auto& j : c4->jobs) max_gpus = std::max(max_gpus, j.gpus);
  EXPECT_EQ(max_gpus, 64);
}

TEST_F(TraceReaderTest, RealMuri) {
  SkipWithoutTraces();
  auto trace = ReadTrace(kTraces + "/muri-philly-2022/trace1.csv");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "muri");
  ASSERT_EQ(trace->jobs.size(), 1494u);
  EXPECT_EQ(trace->jobs[0].duration, 2868294000);  // 33.2 days, in ms as in the file
  EXPECT_EQ(trace->jobs[1].submit, 201694000);
  EXPECT_EQ(trace->jobs[1].gpus, 8);
  EXPECT_EQ(trace->jobs[2].model_name, "vgg16");
  EXPECT_EQ(trace->jobs.back().submit, 10817570000);  // the last arrival, ~125 days
  const std::vector<std::pair<std::string, std::size_t>> counts = {
      {"trace2", 5755}, {"trace3", 992}, {"trace4", 2638}, {"trace1_pr", 1494}};
  for (const auto& [name, count] : counts) {
    auto t = ReadTrace(kTraces + "/muri-philly-2022/" + name + ".csv");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->jobs.size(), count) << name;
  }
}

TEST_F(TraceReaderTest, RealPhilly) {
  SkipWithoutTraces();
  auto trace = ReadTrace(kTraces + "/philly-15k/philly_data_training.csv");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "philly");
  ASSERT_EQ(trace->jobs.size(), 15000u);
  std::set<std::string> users;
  std::map<std::string, int> statuses;
  for (const auto& j : trace->jobs) {
    users.insert(j.user);
    ++statuses[j.status];
  }
  EXPECT_EQ(users.size(), 136u);
  EXPECT_EQ(statuses["Pass"], 8538);
  EXPECT_EQ(statuses["Failed"], 4509);
  EXPECT_EQ(statuses["Killed"], 1953);
  EXPECT_EQ(trace->jobs[1].submit, 395146 * kSecond);
  EXPECT_EQ(trace->jobs[1].nodes, 4);
  // 57.6 days from the first submission to the last.
  EXPECT_NEAR(ToSeconds(trace->jobs.back().submit) / 86400.0, 57.6, 0.1);
}

TEST_F(TraceReaderTest, RealNonJobTracesAreRefused) {
  SkipWithoutTraces();
  auto trace = ReadTrace(kTraces + "/azure-llm-2023/AzureLLMInferenceTrace_code.csv");
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr("unknown trace format"));
  trace = ReadTrace(kTraces + "/mooncake-2025/conversation_trace.jsonl");
  ASSERT_FALSE(trace);
  EXPECT_THAT(trace.error().message, HasSubstr("unknown trace format"));
}

}  // namespace
}  // namespace tessera
