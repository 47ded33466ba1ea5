// Strength masks on grids other than LLaVA's 24x24: PaliGemma's 16x16 and a non-square 12x20
// (loadMask takes the grid directly, so no model is needed). Every form is checked against the
// grid it is read onto, and every mismatch names the grid and what was expected.
#include "TestSupport.h"
#include "Error.h"
#include "io/Image.h"
#include "io/SafeTensors.h"
#include "steer/Mask.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <fstream>

#include <QTemporaryDir>
#include <QtTest>

using namespace kvsteer;

namespace {

at::Tensor cells(int gh, int gw, int r0, int c0, int r1, int c1, float value = 1.0f) {
    at::Tensor m = at::zeros({gh, gw});
    m.narrow(0, r0, r1 - r0 + 1).narrow(1, c0, c1 - c0 + 1).fill_(value);
    return m;
}

// The message of the kvsteer::Error that loading `spec` onto gh x gw throws ("" if none).
std::string loadError(const std::string& spec, int gh, int gw) {
    try {
        loadMask(spec, gh, gw);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

void writeNpy(const std::string& path, const at::Tensor& m) {
    std::ofstream out(path, std::ios::binary);
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(m.size(0)) + ", " +
                         std::to_string(m.size(1)) + "), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    out << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
    const at::Tensor c = m.contiguous();
    out.write(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * 4);
}

// A grayscale image from a [h, w] tensor of levels 0..255.
void writeGray(const std::string& path, const at::Tensor& levels) {
    ImageU8 img(int(levels.size(1)), int(levels.size(0)));
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x)
            for (int ch = 0; ch < 3; ++ch) img.at(y, x, ch) = uint8_t(levels[y][x].item<float>());
    savePng(path, img);
}

} // namespace

class TestMask : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::string path(const char* name) const { return tmp_.filePath(name).toStdString(); }

private slots:
    void rectIsCheckedAgainstTheGrid() {
        QVERIFY(at::equal(loadMask("rect:0,0,15,15", 16, 16), at::ones({16, 16})));
        QVERIFY(at::equal(loadMask("rect:11,19,11,19", 12, 20), cells(12, 20, 11, 19, 11, 19)));
        QVERIFY(at::equal(loadMask("rect:2,5,4,17", 12, 20), cells(12, 20, 2, 5, 4, 17)));
        std::string e = loadError("rect:0,0,23,23", 16, 16);
        QVERIFY2(e.find("rect:0,0,23,23 is outside the model's 16x16 grid") != std::string::npos, e.c_str());
        e = loadError("rect:0,0,19,11", 12, 20);   // rows and columns swapped
        QVERIFY2(e.find("outside the model's 12x20 grid (rows 0-11, columns 0-19)") != std::string::npos, e.c_str());
        e = loadError("rect:5,0,2,3", 16, 16);
        QVERIFY2(e.find("r0 <= r1") != std::string::npos, e.c_str());
        e = loadError("rect:0,0,99999999999,3", 16, 16);   // too many digits for an int: still an Error
        QVERIFY2(e.find("99999999999") != std::string::npos, e.c_str());
        e = loadError("rect:0,0,1,1", 0, 0);
        QVERIFY2(e.find("has no grid") != std::string::npos, e.c_str());
    }

    void imagesAreAreaAveragedOntoAnyGrid() {
        // 2x2 pixels per cell of a 12x20 grid: each cell is exactly its block's mean.
        at::Tensor levels = at::zeros({24, 40});
        levels.narrow(0, 4, 6).narrow(1, 10, 8).fill_(255);   // cells rows 2-4, columns 5-8
        levels[0][0] = 255;                                   // a quarter of cell (0, 0)
        writeGray(path("block.png"), levels);
        at::Tensor want = cells(12, 20, 2, 5, 4, 8);
        want[0][0] = 0.25f;
        QVERIFY(at::equal(loadMask(path("block.png"), 12, 20), want));

        // A size that does not divide: a 3-pixel row over 2 cells shares the middle pixel.
        at::Tensor row = at::zeros({1, 3});
        row[0][0] = 255;
        row[0][1] = 255;
        writeGray(path("row.png"), row);
        const at::Tensor got = loadMask(path("row.png"), 1, 2);   // cell 0: 1.5 white px; cell 1: 0.5 of 1.5
        QVERIFY(at::allclose(got, at::tensor({1.0f, 1.0f / 3.0f}).reshape({1, 2}), 1e-6, 1e-6));

        // A grid finer than the image: every cell takes the pixel under it.
        at::Tensor quad = at::zeros({2, 2});
        quad[1][0] = 255;
        writeGray(path("quad.png"), quad);
        QVERIFY(at::equal(loadMask(path("quad.png"), 16, 16), cells(16, 16, 8, 0, 15, 7)));
    }

    void savedPngsRoundTripOnNonSquareGrids() {
        const at::Tensor m = cells(12, 20, 3, 4, 9, 18, 1.0f);
        saveMaskPng(path("m.png"), m);   // 14 px cells: 280x168
        QVERIFY(at::equal(loadMask(path("m.png"), 12, 20), m));
        // Onto a coarser grid each cell is the mean of the 2x2 fine cells it covers.
        const at::Tensor coarse = m.reshape({6, 2, 10, 2}).mean({1, 3});
        QVERIFY(at::allclose(loadMask(path("m.png"), 6, 10), coarse, 1e-6, 1e-6));
    }

    void arraysMustHaveTheGridsShape() {
        const at::Tensor m = cells(16, 16, 1, 2, 3, 4, 0.5f);
        writeNpy(path("m16.npy"), m);
        QVERIFY(at::equal(loadMask(path("m16.npy"), 16, 16), m));
        std::string e = loadError(path("m16.npy"), 24, 24);
        QVERIFY2(e.find("(16, 16)") != std::string::npos && e.find("(24, 24)") != std::string::npos, e.c_str());
        writeNpy(path("m1220.npy"), cells(12, 20, 0, 0, 1, 1));
        QVERIFY(at::equal(loadMask(path("m1220.npy"), 12, 20), cells(12, 20, 0, 0, 1, 1)));
        e = loadError(path("m1220.npy"), 20, 12);
        QVERIFY2(e.find("(12, 20)") != std::string::npos && e.find("grid is 20x12") != std::string::npos, e.c_str());

        writeSafeTensors(path("m.safetensors"), {{"mask", cells(12, 20, 0, 0, 11, 0)}});
        QVERIFY(at::equal(loadMask(path("m.safetensors"), 12, 20), cells(12, 20, 0, 0, 11, 0)));
        e = loadError(path("m.safetensors"), 16, 16);
        QVERIFY2(e.find("[12, 20]") != std::string::npos && e.find("[16, 16]") != std::string::npos, e.c_str());
    }

    // What is neither a file nor a MASK form names both possibilities; a colour image is refused
    // (read as brightness it would steer what nobody painted).
    void weakInputsAreNamed() {
        std::string e = loadError("6,9,15,18", 24, 24);
        QVERIFY2(e.find("neither a file nor a MASK form") != std::string::npos && e.find("rect:") != std::string::npos, e.c_str());
        ImageU8 colour(8, 8);
        for (int y = 0; y < 8; ++y)
            for (int x = 0; x < 8; ++x) colour.at(y, x, 0) = 255;   // red
        savePng(path("red.png"), colour);
        e = loadError(path("red.png"), 8, 8);
        QVERIFY2(e.find("a colour image") != std::string::npos && e.find("grayscale") != std::string::npos, e.c_str());
    }
};

QTEST_GUILESS_MAIN(TestMask)
#include "test_mask.moc"
