// Video decode/encode over FFmpeg; see video.h.
#include "models/data/video.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <filesystem>
#include <mutex>
#include <set>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include "graph/status.h"
#include "models/data/image.h"

namespace dflow::models {
namespace {

namespace fs = std::filesystem;

// FFmpeg logs its details (which NAL unit, which atom) instead of returning
// them; the last error-level line of each thread is kept for dflow's error.
thread_local std::string last_ffmpeg_error;

void KeepLastError(void* context, int level, const char* format, va_list args) {
  if (level > AV_LOG_ERROR) return;
  char line[512];
  int print_prefix = 1;
  av_log_format_line2(context, level, format, args, line, sizeof line, &print_prefix);
  std::string text(line);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (!text.empty()) last_ffmpeg_error = text;
}

void InstallLogCallback() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(KeepLastError); });
}

// An FFmpeg error code in words, with what FFmpeg logged about it.
std::string Describe(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  std::string out = text;
  if (!last_ffmpeg_error.empty()) out += " (" + last_ffmpeg_error + ")";
  last_ffmpeg_error.clear();
  return out;
}

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string Extension(const std::string& path) { return Lowercase(fs::path(path).extension().string()); }

// The frames a stream declares: the container's count when it keeps one
// (mp4, avi), else its duration times the frame rate (mkv, webm).
int64_t DeclaredFrames(const AVFormatContext& format, const AVStream& stream, double fps) {
  if (stream.nb_frames > 0) return stream.nb_frames;
  if (fps <= 0) return 0;
  if (stream.duration != AV_NOPTS_VALUE && stream.duration > 0)
    return std::llround(static_cast<double>(stream.duration) * av_q2d(stream.time_base) * fps);
  if (format.duration != AV_NOPTS_VALUE && format.duration > 0)
    return std::llround(static_cast<double>(format.duration) / AV_TIME_BASE * fps);
  return 0;
}

}  // namespace

bool IsVideoFile(const std::string& path) {
  static const std::set<std::string> kContainers = {".mp4", ".m4v", ".mkv", ".avi", ".mov", ".webm"};
  return kContainers.count(Extension(path)) > 0;
}

// --- reading

struct VideoReader::State {
  std::string path;
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  SwsContext* to_rgb = nullptr;
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  int stream = -1;
  VideoInfo info;
  int64_t frames = 0;   // returned
  int64_t packets = 0;  // of the video stream, handed to the decoder
  bool draining = false;  // the file is read; the decoder gives back what it holds

  ~State() {
    sws_freeContext(to_rgb);
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&codec);
    avformat_close_input(&format);
  }

  // Frames are named by their place in the file (decoding order): the
  // packet that failed, which with B-frames may not be the next one shown.
  [[noreturn]] void FailFrame(int64_t index, const std::string& what, int code) const {
    Fail(Code::kDataLoss, "video ", path, ": frame ", index, " (in file order) ", what, ": ", Describe(code));
  }

  void Open() {
    if (!fs::exists(path)) Fail(Code::kNotFound, "video ", path, " does not exist");
    if (int r = avformat_open_input(&format, path.c_str(), nullptr, nullptr); r < 0)
      Fail(Code::kDataLoss, "video ", path, " cannot be opened as a video: ", Describe(r));
    if (int r = avformat_find_stream_info(format, nullptr); r < 0)
      Fail(Code::kDataLoss, "video ", path, ": its streams cannot be read: ", Describe(r));
    const AVCodec* decoder = nullptr;
    stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
    if (stream < 0)
      Fail(Code::kDataLoss, "video ", path, " has no video stream FFmpeg can decode: ", Describe(stream));
    const AVStream& s = *format->streams[stream];
    codec = avcodec_alloc_context3(decoder);
    if (!codec) Fail(Code::kUnavailable, "video ", path, ": out of memory for its decoder");
    avcodec_parameters_to_context(codec, s.codecpar);
    codec->err_recognition |= AV_EF_EXPLODE;  // a damaged frame is an error, not a concealed picture
    codec->thread_count = 1;                  // decoding stays on the caller's thread
    if (int r = avcodec_open2(codec, decoder, nullptr); r < 0)
      Fail(Code::kDataLoss, "video ", path, ": its ", decoder->name, " decoder cannot start: ", Describe(r));
    if (codec->width <= 0 || codec->height <= 0)
      Fail(Code::kDataLoss, "video ", path, " declares no frame size");
    CheckFrameSize(codec->width, codec->height);
    AVRational rate = s.avg_frame_rate.num > 0 ? s.avg_frame_rate : s.r_frame_rate;
    info = {.width = codec->width,
            .height = codec->height,
            .fps = rate.den > 0 ? av_q2d(rate) : 0.0,
            .codec = decoder->name,
            .container = format->iformat->name};
    info.declared_frames = DeclaredFrames(*format, s, info.fps);
  }

  // As for images: a size no real video has is refused before any memory
  // is taken for it.
  void CheckFrameSize(int64_t width, int64_t height) const {
    if (width * height > kMaxImagePixels)
      Fail(Code::kDataLoss, "video ", path, ": frame ", frames, " is ", width, "x", height, ", more than the ",
           kMaxImagePixels, " pixels a frame may have");
  }

  Tensor ToRgb() {
    const int w = frame->width, h = frame->height;
    CheckFrameSize(w, h);
    to_rgb = sws_getCachedContext(to_rgb, w, h, static_cast<AVPixelFormat>(frame->format), w, h,
                                  AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
    if (!to_rgb) Fail(Code::kDataLoss, "video ", path, ": frame ", frames, " has a pixel format without RGB conversion");
    Tensor rgb(DType::kUInt8, Shape{h, w, 3});
    uint8_t* planes[4] = {rgb.data<uint8_t>(), nullptr, nullptr, nullptr};
    int strides[4] = {3 * w, 0, 0, 0};
    sws_scale(to_rgb, frame->data, frame->linesize, 0, h, planes, strides);
    av_frame_unref(frame);
    ++frames;
    return rgb;
  }

  // A file read to its end with fewer frames than declared was cut short;
  // durations round, so a frame's difference is let pass for them.
  void CheckComplete() const {
    const AVStream& s = *format->streams[stream];
    const int64_t slack = s.nb_frames > 0 ? 0 : 1;
    if (info.declared_frames > 0 && frames < info.declared_frames - slack)
      Fail(Code::kDataLoss, "video ", path, " ends at frame ", frames, ", before the ", info.declared_frames,
           " frames its header declares: the file is truncated");
  }

  std::optional<Tensor> Next() {
    while (true) {
      int r = avcodec_receive_frame(codec, frame);
      if (r == 0) {
        if ((frame->flags & AV_FRAME_FLAG_CORRUPT) || frame->decode_error_flags)
          Fail(Code::kDataLoss, "video ", path, ": frame ", frames, " is damaged (its data is corrupt)");
        return ToRgb();
      }
      if (r == AVERROR_EOF) {
        CheckComplete();
        return std::nullopt;
      }
      // The decoder fails on the last packet it was given.
      if (r != AVERROR(EAGAIN) || draining) FailFrame(packets - 1, "cannot be decoded", r);
      r = av_read_frame(format, packet);
      if (r == AVERROR_EOF) {
        draining = true;
        avcodec_send_packet(codec, nullptr);
        continue;
      }
      if (r < 0) FailFrame(packets, "cannot be read from the file", r);
      const bool video = packet->stream_index == stream;
      if (video) r = avcodec_send_packet(codec, packet);
      av_packet_unref(packet);
      if (r < 0) FailFrame(packets, "cannot be decoded", r);
      packets += video;
    }
  }
};

VideoReader::VideoReader(const std::string& path) : state_(std::make_unique<State>()) {
  InstallLogCallback();
  state_->path = path;
  state_->Open();
}
VideoReader::~VideoReader() = default;
const VideoInfo& VideoReader::info() const { return state_->info; }
std::optional<Tensor> VideoReader::Next() { return state_->Next(); }
int64_t VideoReader::frames_read() const { return state_->frames; }

// --- writing

namespace {

// The encoder a container gets by default, and a fallback where FFmpeg was
// built without it.
std::vector<std::string> DefaultEncoders(const std::string& extension) {
  if (extension == ".avi") return {"mjpeg"};
  if (extension == ".webm") return {"libvpx-vp9", "libvpx"};
  return {"libx264", "mpeg4"};
}

const AVCodec* FindEncoder(const std::string& path, const VideoWriterOptions& options) {
  std::vector<std::string> names = options.codec.empty() ? DefaultEncoders(Extension(path))
                                                         : std::vector<std::string>{options.codec};
  for (const std::string& name : names)
    if (const AVCodec* encoder = avcodec_find_encoder_by_name(name.c_str())) return encoder;
  Fail(Code::kInvalidArgument, "video ", path, ": FFmpeg has no encoder ", names.front());
}

void SetQuality(AVCodecContext& codec, const AVCodec& encoder, int quality) {
  const std::string name = encoder.name;
  if (name == "libx264") {
    av_opt_set(codec.priv_data, "preset", "veryfast", 0);
    av_opt_set_int(codec.priv_data, "crf", quality, 0);
  } else if (name.rfind("libvpx", 0) == 0) {
    codec.bit_rate = 0;  // constant quality
    av_opt_set_int(codec.priv_data, "crf", quality, 0);
    av_opt_set(codec.priv_data, "deadline", "realtime", 0);
    av_opt_set_int(codec.priv_data, "cpu-used", 8, 0);
  } else {
    codec.flags |= AV_CODEC_FLAG_QSCALE;
    codec.global_quality = FF_QP2LAMBDA * std::max(1, quality / 8);
  }
}

}  // namespace

struct VideoWriter::State {
  std::string path, partial;
  int64_t width = 0, height = 0;
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVStream* stream = nullptr;
  SwsContext* from_rgb = nullptr;
  AVFrame* frame = av_frame_alloc();
  AVPacket* packet = av_packet_alloc();
  int64_t frames = 0;
  bool closed = false;

  ~State() {
    sws_freeContext(from_rgb);
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
    if (format) {
      if (format->pb) avio_closep(&format->pb);
      avformat_free_context(format);
    }
    if (!closed) {
      std::error_code ignored;
      fs::remove(partial, ignored);
    }
  }

  void OpenEncoder(const VideoWriterOptions& options) {
    const AVCodec* encoder = FindEncoder(path, options);
    codec = avcodec_alloc_context3(encoder);
    const bool jpeg = std::string(encoder->name) == "mjpeg";
    codec->pix_fmt = jpeg ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_YUV420P;
    codec->width = static_cast<int>((width + 1) / 2 * 2);  // 4:2:0 chroma needs even sizes
    codec->height = static_cast<int>((height + 1) / 2 * 2);
    codec->framerate = av_d2q(options.fps, 1 << 20);
    codec->time_base = av_inv_q(codec->framerate);
    codec->thread_count = 1;  // encoding does not compete with the caller's threads
    if (format->oformat->flags & AVFMT_GLOBALHEADER) codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    SetQuality(*codec, *encoder, options.quality);
    if (int r = avcodec_open2(codec, encoder, nullptr); r < 0)
      Fail(Code::kInvalidArgument, "video ", path, ": the ", encoder->name, " encoder refuses ", width, "x", height,
           " frames at ", options.fps, " fps: ", Describe(r));
    stream = avformat_new_stream(format, nullptr);
    avcodec_parameters_from_context(stream->codecpar, codec);
    stream->time_base = codec->time_base;
    frame->format = codec->pix_fmt;
    frame->width = codec->width;
    frame->height = codec->height;
    if (int r = av_frame_get_buffer(frame, 0); r < 0)
      Fail(Code::kUnavailable, "video ", path, ": no memory for a frame: ", Describe(r));
    from_rgb = sws_getContext(static_cast<int>(width), static_cast<int>(height), AV_PIX_FMT_RGB24, codec->width,
                              codec->height, codec->pix_fmt, SWS_BILINEAR, nullptr, nullptr, nullptr);
  }

  void Open(const VideoWriterOptions& options) {
    DFLOW_REQUIRE(width > 0 && height > 0, "video ", path, ": frames must have a size, got ", width, "x", height);
    DFLOW_REQUIRE(options.fps > 0 && options.fps <= 1000, "video ", path, ": fps must be in (0, 1000], got ",
                  options.fps);
    const AVOutputFormat* container = IsVideoFile(path) ? av_guess_format(nullptr, path.c_str(), nullptr) : nullptr;
    if (!container)
      Fail(Code::kInvalidArgument, "video ", path, ": unknown container (give .mp4, .mkv, .avi, .mov or .webm)");
    partial = path + ".partial";
    if (int r = avformat_alloc_output_context2(&format, container, nullptr, partial.c_str()); r < 0)
      Fail(Code::kInvalidArgument, "video ", path, ": ", Describe(r));
    OpenEncoder(options);
    if (int r = avio_open(&format->pb, partial.c_str(), AVIO_FLAG_WRITE); r < 0)
      Fail(Code::kNotFound, "video ", path, " cannot be created: ", Describe(r));
    AVDictionary* muxer_options = nullptr;
    if (std::string(container->name) == "mp4" || std::string(container->name) == "mov")
      av_dict_set(&muxer_options, "movflags", "+faststart", 0);  // the index first: players start at once
    const int r = avformat_write_header(format, &muxer_options);
    av_dict_free(&muxer_options);
    if (r < 0) Fail(Code::kInvalidArgument, "video ", path, ": the container cannot be started: ", Describe(r));
  }

  // Hands `input` (null: the end) to the encoder and writes what it returns.
  void Encode(const AVFrame* input) {
    if (int r = avcodec_send_frame(codec, input); r < 0)
      Fail(Code::kInternal, "video ", path, ": frame ", frames, " cannot be encoded: ", Describe(r));
    while (true) {
      int r = avcodec_receive_packet(codec, packet);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      if (r < 0) Fail(Code::kInternal, "video ", path, ": frame ", frames, " cannot be encoded: ", Describe(r));
      packet->duration = 1;  // one frame; the last one's is what the container's duration (and edit list) ends with
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      r = av_interleaved_write_frame(format, packet);  // takes the packet's data
      if (r < 0) Fail(Code::kInternal, "video ", path, ": writing frame data failed: ", Describe(r));
    }
  }

  void Write(const Tensor& rgb) {
    DFLOW_REQUIRE(!closed, "video ", path, " is closed");
    const Shape expected{height, width, 3};
    DFLOW_REQUIRE(rgb.dtype() == DType::kUInt8 && rgb.shape() == expected, "video ", path, ": frames must be uint8 ",
                  expected.ToString(), " (RGB), got ", DTypeName(rgb.dtype()), " ", rgb.shape().ToString());
    if (int r = av_frame_make_writable(frame); r < 0)
      Fail(Code::kUnavailable, "video ", path, ": ", Describe(r));
    const uint8_t* planes[4] = {rgb.data<uint8_t>(), nullptr, nullptr, nullptr};
    const int strides[4] = {static_cast<int>(3 * width), 0, 0, 0};
    sws_scale(from_rgb, planes, strides, 0, static_cast<int>(height), frame->data, frame->linesize);
    frame->pts = frames;
    Encode(frame);
    ++frames;
  }

  void Close() {
    if (closed) return;
    Encode(nullptr);
    if (int r = av_write_trailer(format); r < 0)
      Fail(Code::kInternal, "video ", path, ": the container's index cannot be written: ", Describe(r));
    avio_closep(&format->pb);
    fs::rename(partial, path);
    closed = true;
  }
};

VideoWriter::VideoWriter(const std::string& path, int64_t height, int64_t width, const VideoWriterOptions& options)
    : state_(std::make_unique<State>()) {
  InstallLogCallback();
  state_->path = path;
  state_->height = height;
  state_->width = width;
  state_->Open(options);
}
VideoWriter::~VideoWriter() = default;
void VideoWriter::Write(const Tensor& frame) { state_->Write(frame); }
void VideoWriter::Close() { state_->Close(); }
int64_t VideoWriter::frames_written() const { return state_->frames; }

}  // namespace dflow::models
