// Resizing and cropping. The resampler is an independent implementation of the algorithm
// Pillow 9.4 uses for Image.resize(..., BICUBIC) on 8-bit images (libImaging/Resample.c): per
// output pixel, filter weights are computed in double, normalised to sum 1, rounded to 22-bit
// fixed point, and applied in two passes (horizontal into an 8-bit intermediate holding only the
// rows the vertical pass needs, then vertical), each result rounded (+2^21) and clipped to 0..255.
#include "io/Image.h"

#include "Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace kvsteer {

namespace {

long long floorDiv2(long long v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// ---------------------------------------------------------------------------------------------
// Resampling (Pillow's bicubic convolution, fixed point, 8 bits per channel)

constexpr int kPrecisionBits = 32 - 8 - 2;  // 22
constexpr double kBicubicSupport = 2.0;

// Products through a volatile so that the compiler can never fuse them into an FMA (which would
// round differently from Pillow's separately rounded multiply and add).
inline double mulNoFma(double a, double b) {
    volatile double p = a * b;
    return p;
}

// Keys' cubic convolution kernel with a = -0.5.
double bicubicFilter(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) {
        const double t = mulNoFma(a + 2.0, x) - (a + 3.0);
        return mulNoFma(mulNoFma(t, x), x) + 1.0;
    }
    if (x < 2.0) {
        const double t1 = mulNoFma(x - 5.0, x) + 8.0;
        const double t2 = mulNoFma(t1, x) - 4.0;
        return mulNoFma(t2, a);
    }
    return 0.0;
}

// Fixed-point coefficients for one axis: output i reads `count[i]` input samples starting at
// `first[i]` with weights kk[i * ksize + j].
struct AxisCoeffs {
    int ksize = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<int32_t> kk;
};

AxisCoeffs computeCoeffs(int inSize, int outSize) {
    // Box is the whole input: in0 = 0, in1 = inSize.
    const double scale = static_cast<double>(inSize) / outSize;
    const double filterScale = scale < 1.0 ? 1.0 : scale;
    const double support = kBicubicSupport * filterScale;
    AxisCoeffs c;
    c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    c.first.resize(outSize);
    c.count.resize(outSize);
    c.kk.assign(static_cast<size_t>(outSize) * c.ksize, 0);
    std::vector<double> w(c.ksize);
    const double ss = 1.0 / filterScale;
    for (int xx = 0; xx < outSize; ++xx) {
        const double center = mulNoFma(xx + 0.5, scale);
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > inSize) xmax = inSize;
        xmax -= xmin;
        if (xmax > c.ksize) xmax = c.ksize;  // cannot happen; keeps indexing safe
        double sum = 0.0;
        for (int x = 0; x < xmax; ++x) {
            const double v = bicubicFilter(mulNoFma(x + xmin - center + 0.5, ss));
            w[x] = v;
            sum += v;
        }
        for (int x = 0; x < xmax; ++x) {
            if (sum != 0.0) w[x] /= sum;
        }
        int32_t* k = &c.kk[static_cast<size_t>(xx) * c.ksize];
        for (int x = 0; x < xmax; ++x) {
            const double scaled = w[x] * static_cast<double>(1 << kPrecisionBits);
            k[x] = static_cast<int32_t>(w[x] < 0 ? scaled - 0.5 : scaled + 0.5);
        }
        c.first[xx] = xmin;
        c.count[xx] = xmax;
    }
    return c;
}

inline uint8_t clip8(int64_t v) {
    if (v >= (int64_t(1) << kPrecisionBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<uint8_t>(v >> kPrecisionBits);
}

// Horizontal pass over input rows [rowBegin, rowBegin + out.height).
void resampleHorizontal(const ImageU8& in, ImageU8& out, int rowBegin, const AxisCoeffs& c) {
    const int64_t half = int64_t(1) << (kPrecisionBits - 1);
    for (int yy = 0; yy < out.height; ++yy) {
        const uint8_t* row = &in.rgb[static_cast<size_t>(yy + rowBegin) * in.width * 3];
        uint8_t* dst = &out.rgb[static_cast<size_t>(yy) * out.width * 3];
        for (int xx = 0; xx < out.width; ++xx) {
            const int32_t* k = &c.kk[static_cast<size_t>(xx) * c.ksize];
            const uint8_t* src = row + static_cast<size_t>(c.first[xx]) * 3;
            int64_t s0 = half, s1 = half, s2 = half;
            for (int x = 0; x < c.count[xx]; ++x) {
                s0 += int64_t(src[x * 3 + 0]) * k[x];
                s1 += int64_t(src[x * 3 + 1]) * k[x];
                s2 += int64_t(src[x * 3 + 2]) * k[x];
            }
            dst[xx * 3 + 0] = clip8(s0);
            dst[xx * 3 + 1] = clip8(s1);
            dst[xx * 3 + 2] = clip8(s2);
        }
    }
}

// Vertical pass; input rows are offset by -rowShift relative to the coefficients' indices.
void resampleVertical(const ImageU8& in, ImageU8& out, int rowShift, const AxisCoeffs& c) {
    const int64_t half = int64_t(1) << (kPrecisionBits - 1);
    const size_t stride = static_cast<size_t>(in.width) * 3;
    for (int yy = 0; yy < out.height; ++yy) {
        const int32_t* k = &c.kk[static_cast<size_t>(yy) * c.ksize];
        const int ymin = c.first[yy] - rowShift;
        const int n = c.count[yy];
        uint8_t* dst = &out.rgb[static_cast<size_t>(yy) * out.width * 3];
        for (int xx = 0; xx < out.width; ++xx) {
            const uint8_t* src = &in.rgb[static_cast<size_t>(ymin) * stride + static_cast<size_t>(xx) * 3];
            int64_t s0 = half, s1 = half, s2 = half;
            for (int y = 0; y < n; ++y) {
                const uint8_t* p = src + static_cast<size_t>(y) * stride;
                s0 += int64_t(p[0]) * k[y];
                s1 += int64_t(p[1]) * k[y];
                s2 += int64_t(p[2]) * k[y];
            }
            dst[xx * 3 + 0] = clip8(s0);
            dst[xx * 3 + 1] = clip8(s1);
            dst[xx * 3 + 2] = clip8(s2);
        }
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Geometry

ImageU8 resizeBicubic(const ImageU8& img, int newWidth, int newHeight) {
    requireRgbImage(img, "resizeBicubic");
    if (newWidth <= 0 || newHeight <= 0)
        throw Error("resizeBicubic: target size " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                    " is invalid; expected a width and height > 0");
    if (static_cast<long long>(newWidth) * newHeight > kMaxImagePixels)
        throw Error("resizeBicubic: target size " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                    " is too large; expected at most " + std::to_string(kMaxImagePixels) + " pixels");
    const bool needH = newWidth != img.width;
    const bool needV = newHeight != img.height;
    if (!needH && !needV) return img;  // Pillow: same size -> copy

    const AxisCoeffs ch = computeCoeffs(img.width, newWidth);
    const AxisCoeffs cv = computeCoeffs(img.height, newHeight);

    // Rows of the input the vertical pass reads.
    const int rowFirst = cv.first[0];
    const int rowLast = cv.first[newHeight - 1] + cv.count[newHeight - 1];

    if (needH) {
        if (static_cast<long long>(newWidth) * (rowLast - rowFirst) > kMaxImagePixels)
            throw Error("resizeBicubic: resizing " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                        " to " + std::to_string(newWidth) + "x" + std::to_string(newHeight) +
                        " needs a too large intermediate image; expected at most " +
                        std::to_string(kMaxImagePixels) + " pixels");
        ImageU8 tmp(newWidth, rowLast - rowFirst);
        resampleHorizontal(img, tmp, rowFirst, ch);
        if (!needV) return tmp;  // rowFirst == 0 and all rows when the height is unchanged
        ImageU8 out(newWidth, newHeight);
        resampleVertical(tmp, out, rowFirst, cv);
        return out;
    }
    ImageU8 out(img.width, newHeight);
    resampleVertical(img, out, 0, cv);
    return out;
}

ImageU8 centerCrop(const ImageU8& img, int cropWidth, int cropHeight) {
    requireRgbImage(img, "centerCrop");
    if (cropWidth <= 0 || cropHeight <= 0)
        throw Error("centerCrop: crop size " + std::to_string(cropWidth) + "x" + std::to_string(cropHeight) +
                    " is invalid; expected a width and height > 0");
    const long long H = img.height, W = img.width;
    long long top = floorDiv2(H - cropHeight), left = floorDiv2(W - cropWidth);
    long long bottom = top + cropHeight, right = left + cropWidth;
    // transformers pads a too-small image with zeros, centred (pad before = ceil(diff / 2)).
    const long long newH = std::max<long long>(cropHeight, H), newW = std::max<long long>(cropWidth, W);
    const long long topPad = (newH - H + 1) / 2, leftPad = (newW - W + 1) / 2;
    top += topPad;
    bottom += topPad;
    left += leftPad;
    right += leftPad;
    const long long y0 = std::max<long long>(0, top), y1 = std::min(newH, bottom);
    const long long x0 = std::max<long long>(0, left), x1 = std::min(newW, right);
    ImageU8 out(static_cast<int>(x1 - x0), static_cast<int>(y1 - y0));
    for (long long y = y0; y < y1; ++y) {
        const long long sy = y - topPad;
        if (sy < 0 || sy >= H) continue;
        for (long long x = x0; x < x1; ++x) {
            const long long sx = x - leftPad;
            if (sx < 0 || sx >= W) continue;
            const size_t s = (static_cast<size_t>(sy) * img.width + static_cast<size_t>(sx)) * 3;
            const size_t d = (static_cast<size_t>(y - y0) * out.width + static_cast<size_t>(x - x0)) * 3;
            out.rgb[d] = img.rgb[s];
            out.rgb[d + 1] = img.rgb[s + 1];
            out.rgb[d + 2] = img.rgb[s + 2];
        }
    }
    return out;
}

ResizeSize shortestEdgeResizeSize(int width, int height, int shortestEdge) {
    if (width <= 0 || height <= 0 || shortestEdge <= 0)
        throw Error("shortest-edge resize: invalid sizes (image " + std::to_string(width) + "x" +
                    std::to_string(height) + ", shortest edge " + std::to_string(shortestEdge) +
                    "); expected positive values");
    const bool portrait = width <= height;
    const long long shortSide = portrait ? width : height;
    const long long longSide = portrait ? height : width;
    if (shortSide == shortestEdge) return {width, height};
    // Python: int(size * long / short) -- true division of ints, then truncation.
    const double q = static_cast<double>(static_cast<long long>(shortestEdge) * longSide) / static_cast<double>(shortSide);
    if (!(q < static_cast<double>(std::numeric_limits<int>::max())))
        throw Error("shortest-edge resize: image " + std::to_string(width) + "x" + std::to_string(height) +
                    " has an absurd aspect ratio; the long edge would be " + std::to_string(q) + " pixels");
    const int newLong = static_cast<int>(q);
    if (newLong <= 0)
        throw Error("shortest-edge resize: image " + std::to_string(width) + "x" + std::to_string(height) +
                    " would resize to an empty image");
    return portrait ? ResizeSize{shortestEdge, newLong} : ResizeSize{newLong, shortestEdge};
}

} // namespace kvsteer
