// core/progress_bar: the one bar of every long command, drawn into memory streams (open_memstream:
// no terminal, so `on` forces the bar) with an injected clock: redraws rate-limited (first and last
// always drawn), rate and ETA text (resume start excluded, byte units scaled), a message is never
// overwritten (bar cleared, text + newline, bar redrawn below), finish clears the line or keeps
// it, the destructor clears, plain lines when not a terminal (or nothing), the line cut to the
// width, format_duration.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/progress_bar.h"

namespace {

using olmo::ProgressBar;
using olmo::ProgressMode;
using olmo::ProgressOptions;

// A FILE* whose bytes can be read back.
class Sink {
 public:
  Sink() : f_(open_memstream(&buf_, &len_)) {}
  ~Sink() {
    std::fclose(f_);
    std::free(buf_);
  }
  FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  FILE* f_;
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

struct Fixture {
  Sink bar, text;
  double t = 0;
  ProgressOptions opt(ProgressMode mode = ProgressMode::on) {
    ProgressOptions o;
    o.mode = mode;
    o.bar_out = bar.file();
    o.text_out = text.file();
    o.width = 200;
    o.clock = [this] { return t; };
    return o;
  }
};

TEST(ProgressBar, RedrawsAtMostOncePerIntervalFirstAndLastAlways) {
  Fixture fx;
  ProgressBar b(10, "job", fx.opt());
  fx.t = 0.00, b.update(1);   // first: drawn
  fx.t = 0.05, b.update(2);   // inside the interval: not drawn
  fx.t = 0.09, b.update(3);   // not drawn
  fx.t = 0.15, b.update(4);   // drawn
  fx.t = 0.16, b.update(10);  // the last: drawn although inside the interval
  const std::string out = fx.bar.text();
  EXPECT_EQ(count(out, "\r"), 3u) << out;
  EXPECT_NE(out.find(" 1/10"), std::string::npos);
  EXPECT_EQ(out.find(" 2/10"), std::string::npos);
  EXPECT_EQ(out.find(" 3/10"), std::string::npos);
  EXPECT_NE(out.find(" 4/10"), std::string::npos);
  EXPECT_NE(out.find("100% 10/10"), std::string::npos);
  EXPECT_EQ(fx.text.text(), "");  // nothing on the text stream (stdout)
}

TEST(ProgressBar, ThousandsOfUpdatesInASecondDrawAboutTenTimes) {
  Fixture fx;
  ProgressBar b(100000, "job", fx.opt());
  for (int i = 1; i < 100000; ++i) {
    fx.t = i * 1e-5;  // 99,999 updates over one second
    b.update(i);
  }
  const size_t n = count(fx.bar.text(), "\r");
  EXPECT_GE(n, 9u);
  EXPECT_LE(n, 11u);
}

TEST(ProgressBar, RateAndEta) {
  Fixture fx;
  auto o = fx.opt();
  o.units = "docs";
  ProgressBar b(100, "evaluate", o);  // constructed at t = 0
  EXPECT_EQ(b.bar_line(25, "", 10.0),
            "evaluate [######..................]  25% 25/100 docs 2.5 docs/s ETA 30s");
  EXPECT_EQ(b.bar_line(25, "arc", 10.0),
            "evaluate [######..................]  25% 25/100 docs 2.5 docs/s ETA 30s arc");
  EXPECT_EQ(b.bar_line(0, "", 0.0), "evaluate [........................]   0% 0/100 docs");
  EXPECT_EQ(b.bar_line(100, "", 400.0),
            "evaluate [########################] 100% 100/100 docs 0.2 docs/s ETA 0s");
  EXPECT_EQ(b.plain_line(25, "x", 10.0), "evaluate 25/100 docs (2.5 docs/s ETA 30s) x");
  // 100 units/s and more: no decimals.
  EXPECT_EQ(b.bar_line(60, "", 0.5),
            "evaluate [##############..........]  60% 60/100 docs 120 docs/s ETA 0s");
}

TEST(ProgressBar, ResumeStartIsNotInTheRate) {
  Fixture fx;
  auto o = fx.opt();
  o.start = 50;
  ProgressBar b(100, "", o);
  EXPECT_EQ(b.bar_line(60, "", 10.0), "[##############..........]  60% 60/100 1.0/s ETA 40s");
}

TEST(ProgressBar, ByteUnitsAreScaled) {
  Fixture fx;
  auto o = fx.opt();
  o.units = "B";
  ProgressBar b(2500000, "prepare", o);
  EXPECT_EQ(b.bar_line(1000000, "7 docs", 2.0),
            "prepare [#########...............]  40% 1.0/2.5 MB 0.5 MB/s ETA 3s 7 docs");
  ProgressBar small(512, "x", o);
  EXPECT_EQ(small.bar_line(256, "", 1.0), "x [############............]  50% 256/512 B 256.0 B/s ETA 1s");
}

TEST(ProgressBar, StatsOffShowsCountsOnly) {
  Fixture fx;
  auto o = fx.opt();
  o.stats = false;
  ProgressBar b(10, "step", o);
  EXPECT_EQ(b.bar_line(3, "loss 2.5", 5.0), "step [#######.................]  30% 3/10 loss 2.5");
  EXPECT_EQ(b.plain_line(3, "loss 2.5", 5.0), "step 3/10 loss 2.5");
}

TEST(ProgressBar, MessageIsNotOverwritten) {
  Fixture fx;
  auto o = fx.opt();
  o.text_out = o.bar_out;  // one terminal: both streams interleave
  o.stats = false;
  ProgressBar b(10, "step", o);
  fx.t = 0, b.update(3, "a");
  fx.t = 0.01, b.message("checkpoint step3");
  const std::string bar3 = "\rstep [#######.................]  30% 3/10 a\033[K";
  EXPECT_EQ(fx.bar.text(), bar3 + "\r\033[K" + "checkpoint step3\n" + bar3);
  // The message line is whole: cleared before, ended by a newline, the bar redrawn after it.
}

TEST(ProgressBar, MessageWithoutBarGoesToTextStreamOnly) {
  Fixture fx;
  ProgressBar b(10, "step", fx.opt(ProgressMode::off));
  b.message("hello");
  EXPECT_EQ(fx.text.text(), "hello\n");
  EXPECT_EQ(fx.bar.text(), "");
}

TEST(ProgressBar, FinishClearsTheLineAndLaterUpdatesDrawNothing) {
  Fixture fx;
  ProgressBar b(10, "job", fx.opt());
  b.update(5);
  b.finish();
  const std::string once = fx.bar.text();
  EXPECT_EQ(once.substr(once.size() - 4), "\r\033[K");
  fx.t = 10, b.update(6);
  b.finish();
  EXPECT_EQ(fx.bar.text(), once);
}

TEST(ProgressBar, FinishKeepDrawsThePendingStateAndEndsTheLine) {
  Fixture fx;
  ProgressBar b(10, "job", fx.opt());
  fx.t = 0, b.update(5);
  fx.t = 0.01, b.update(6);  // rate-limited: pending
  b.finish(/*keep=*/true);
  const std::string out = fx.bar.text();
  EXPECT_NE(out.find(" 6/10"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(count(out, "\r\033[K"), 0u);  // never cleared
}

TEST(ProgressBar, DestructorClearsTheLine) {
  Fixture fx;
  {
    ProgressBar b(10, "job", fx.opt());
    b.update(5);
  }  // e.g. an exception unwinding through the command
  const std::string out = fx.bar.text();
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");
}

TEST(ProgressBar, NotATerminalPlainLinesOrNothing) {
  {  // automatic on a non-terminal with line_every: plain lines at 1, every 2nd and the last
    Fixture fx;
    auto o = fx.opt(ProgressMode::automatic);
    o.line_every = 2;
    o.stats = false;
    ProgressBar b(5, "step", o);
    EXPECT_FALSE(b.drawing());
    for (int i = 1; i <= 5; ++i) b.update(i, "a");
    b.finish(true);
    EXPECT_EQ(fx.text.text(), "step 1/5 a\nstep 2/5 a\nstep 4/5 a\nstep 5/5 a\n");
    EXPECT_EQ(fx.bar.text(), "");
  }
  {  // automatic without line_every (every command but train): nothing at all
    Fixture fx;
    ProgressBar b(5, "audit", fx.opt(ProgressMode::automatic));
    for (int i = 1; i <= 5; ++i) fx.t = i, b.update(i, "a");
    b.finish();
    EXPECT_EQ(fx.text.text(), "");
    EXPECT_EQ(fx.bar.text(), "");
  }
  {  // silent: nothing, messages included
    Fixture fx;
    auto o = fx.opt(ProgressMode::silent);
    o.line_every = 1;
    ProgressBar b(5, "step", o);
    b.update(1, "a");
    b.message("hidden");
    b.finish(true);
    EXPECT_EQ(fx.text.text(), "");
    EXPECT_EQ(fx.bar.text(), "");
  }
}

TEST(ProgressBar, LineIsCutToTheWidth) {
  Fixture fx;
  auto o = fx.opt();
  o.width = 30;
  ProgressBar b(10, "job", o);
  b.update(5, std::string(100, 'x'));
  const std::string out = fx.bar.text();
  ASSERT_EQ(out.front(), '\r');
  EXPECT_EQ(out.size(), 1 + 29 + 3u);  // "\r", 29 columns, "\033[K": never wraps
}

TEST(ProgressBar, FormatDuration) {
  EXPECT_EQ(olmo::format_duration(45), "45s");
  EXPECT_EQ(olmo::format_duration(192), "3m12s");
  EXPECT_EQ(olmo::format_duration(3720), "1h02m");
  EXPECT_EQ(olmo::format_duration(-1), "?");
  EXPECT_EQ(olmo::format_duration(std::numeric_limits<double>::infinity()), "?");
}

}  // namespace
