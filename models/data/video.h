// Video files <-> uint8 RGB frames [height, width, 3], through FFmpeg's
// libavformat (containers: mp4, mkv, avi, mov, webm, ...), libavcodec
// (H.264, MPEG-4, MJPEG, VP8/9, ...) and libswscale (pixel formats). Every
// failure names the file, and a frame that cannot be decoded is named by
// its index; a file that ends before the frames its header declares is
// reported as truncated rather than read as a shorter video.
//
// FFmpeg's own log lines are not printed: the last error it logged on a
// thread is added to the error dflow throws there instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "graph/tensor.h"

namespace dflow::models {

struct VideoInfo {
  int64_t width = 0, height = 0;
  double fps = 0;                 // frames per second (the stream's average rate)
  int64_t declared_frames = 0;    // frames the container says it holds; 0: it does not say
  std::string codec, container;   // FFmpeg's short names, e.g. "h264", "mov,mp4,m4a,3gp,3g2,mj2"
};

// Decodes a video's first video stream, frame by frame.
class VideoReader {
 public:
  // Throws kNotFound (no such file) or kDataLoss (not a video FFmpeg can
  // decode, or one without a video stream), naming `path`.
  explicit VideoReader(const std::string& path);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  const VideoInfo& info() const;
  // The next frame as uint8 [height, width, 3] RGB; nullopt after the last.
  // Throws kDataLoss naming the file and the frame's index (from 0) when a
  // frame cannot be decoded, or when the file ends before its declared
  // frames (truncated).
  std::optional<Tensor> Next();
  // Frames returned so far.
  int64_t frames_read() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct VideoWriterOptions {
  double fps = 25;
  // An FFmpeg encoder name ("libx264", "mpeg4", "mjpeg", "libvpx-vp9", ...);
  // empty: the file's container decides (H.264 for mp4, mkv and mov, MJPEG
  // for avi, VP9 for webm).
  std::string codec;
  int quality = 23;  // H.264/VP9's constant rate factor, MJPEG/MPEG-4's q scale x 4 (lower is better)
};

// Encodes frames into a new video file, written under a temporary name and
// renamed to `path` by Close(): a writer destroyed without Close() (an error
// on the way) leaves no file behind.
class VideoWriter {
 public:
  // The container follows `path`'s extension (.mp4, .mkv, .avi, .mov,
  // .webm). Frames are width x height; codecs that need even sizes get the
  // frames scaled to the next even size. Throws kInvalidArgument for an
  // unknown container or codec, or a size the codec refuses.
  VideoWriter(const std::string& path, int64_t height, int64_t width, const VideoWriterOptions& options = {});
  ~VideoWriter();
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  // uint8 [height, width, 3] RGB, the size given at construction.
  void Write(const Tensor& frame);
  // Flushes the encoder, writes the container's index and moves the file
  // into place.
  void Close();
  int64_t frames_written() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Whether `path`'s extension is one of the video containers above (the
// apps tell a video from an image folder by it).
bool IsVideoFile(const std::string& path);

}  // namespace dflow::models
