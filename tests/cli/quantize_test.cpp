// `metrale quantize` end to end (issue 11, items 5 and 7): the output location is checked before
// anything is computed, a failure leaves no partial output, I/O failures carry the OS reason and
// are not "invalid argument", `-o ''` and a directory as --input are refused plainly, and NaN
// weights are refused naming the first one.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "cli_run.hpp"

namespace metrale::cli_test {
namespace {

void write_weight(const std::string& path, int n, int k, std::uint16_t value,
                  int nan_at = -1) {
  std::vector<std::uint16_t> w(static_cast<std::size_t>(n) * k, value);
  if (nan_at >= 0) w[nan_at] = 0x7FC0;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 2));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(QuantizeCli, WritesAllOutputs) {
  ScratchDir dir("ok");
  write_weight(dir / "w.bf16", 4, 32, 0x40C0);
  const CliRun run = run_cli("quantize -i " + dir / "w.bf16" + " -n 4 -k 32 --sfb -o " + dir / "w");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* ext : {".packed", ".scale", ".scale_2", ".sfb"})
    EXPECT_TRUE(std::filesystem::exists(dir / (std::string("w") + ext))) << ext;
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 5) << "no temporary file is left behind";
}

TEST(QuantizeCli, OutputLocationIsCheckedBeforeReadingTheInput) {
  ScratchDir dir("outdir");
  // The input does not exist either: the output location must be the first complaint.
  const CliRun run = run_cli("quantize -i " + dir / "missing.bf16" + " -n 4 -k 32 -o " +
                             dir / "no/such/dir/w");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.output, "metrale quantize: I/O error: the directory of --out")) << run.output;
  EXPECT_TRUE(contains(run.output, "No such file or directory")) << run.output;
  const CliRun empty = run_cli("quantize -i " + dir / "missing.bf16" + " -n 4 -k 32 -o ''");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(contains(empty.output, "invalid argument: --out is empty")) << empty.output;
}

TEST(QuantizeCli, InputErrorsCarryTheOsReason) {
  ScratchDir dir("input");
  const CliRun missing = run_cli("quantize -i " + dir / "missing.bf16" + " -n 4 -k 32 -o " + dir / "w");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.output, "I/O error: cannot open --input")) << missing.output;
  EXPECT_TRUE(contains(missing.output, "No such file or directory")) << missing.output;
  const CliRun directory = run_cli("quantize -i " + dir.path().string() + " -n 4 -k 32 -o " + dir / "w");
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_TRUE(contains(directory.output, "is not a regular file")) << directory.output;
  EXPECT_FALSE(contains(directory.output, "9223372036854775807")) << directory.output;
}

// The input's size is checked before it is read: a 200 GB sparse file once ended in bad_alloc.
TEST(QuantizeCli, AWrongSizedInputIsRefusedBeforeItIsRead) {
  ScratchDir dir("size");
  const std::string big = dir / "big.bf16";
  { std::ofstream(big, std::ios::binary); }
  std::filesystem::resize_file(big, std::uintmax_t{200} << 30);  // sparse: no disk is used
  const CliRun run = run_cli("quantize -i " + big + " -n 4 -k 32 -o " + dir / "w");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.output, "holds 214748364800 bytes, but N = 4 x K = 32 bf16 needs 256"))
      << run.output;
}

TEST(QuantizeCli, NanWeightsAreRefusedAndNothingIsWritten) {
  ScratchDir dir("nan");
  write_weight(dir / "w.bf16", 4, 32, 0x40C0, 70);
  const CliRun run = run_cli("quantize --backend cpu -i " + dir / "w.bf16" + " -n 4 -k 32 -o " + dir / "w");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.output, "weight_bf16[70] = nan (row 2, column 6) is not finite"))
      << run.output;
  EXPECT_FALSE(contains(run.output, "scale_2 = 1")) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "w.packed"));
}

TEST(QuantizeCli, AFailedWriteLeavesNoPartialOutput) {
  ScratchDir dir("partial");
  write_weight(dir / "w.bf16", 4, 32, 0x40C0);
  std::filesystem::create_directories(dir / "w.sfb");  // rename onto a directory fails
  const CliRun run = run_cli("quantize -i " + dir / "w.bf16" + " -n 4 -k 32 --sfb -o " + dir / "w");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "I/O error")) << run.output;
  int temps = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    temps += contains(e.path().filename().string(), ".tmp-") ? 1 : 0;
  EXPECT_EQ(temps, 0) << "temporary files removed";
  EXPECT_FALSE(std::filesystem::exists(dir / "w.packed")) << "no output appears when one fails";
}

}  // namespace
}  // namespace metrale::cli_test
