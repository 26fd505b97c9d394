#!/usr/bin/env python3
"""The job service's web page in a real browser (Debian's headless Chromium
driven through Selenium): register a dataset, upload one as an archive and
submit a 2-worker counting job through the forms, watch its curve grow and its log fill, take a
screenshot, stop it from the page and see it stopped.

Usage: test_dflow_jobs_page.py BUILD/apps SCREENSHOT.png
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

BIN, SCREENSHOT = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="dflow-jobs-page-")
os.environ["TMPDIR"] = tmp  # Chromium's profile and singleton socket go here too, and go with it
root = os.path.join(tmp, "root")
subprocess.run([os.path.join(BIN, "dflow-count"), "generate", "--out", os.path.join(root, "flowers"),
                "--images", "8", "--width", "72", "--height", "40", "--max-flowers", "6", "--seed", "3"],
               check=True, stdout=subprocess.DEVNULL)
service = subprocess.Popen([os.path.join(BIN, "dflow"), "jobs", "serve", "--data-root", root, "--port", "0"],
                           stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "serve.log"), "w"), text=True)
driver = None
try:
    port = int(service.stdout.readline().split()[1])
    token = open(os.path.join(root, "jobs.sqlite.token")).read().strip()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1400"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    wait = WebDriverWait(driver, 90, poll_frequency=0.2)

    def type_over(field, value):
        """Select-all, then type (clear() does not tell Vue's v-model; a held Ctrl would swallow the text)."""
        element = driver.find_element(By.ID, field)
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(value)
    driver.get("http://127.0.0.1:%d/?token=%s" % (port, token))

    # Register the dataset through the page.
    wait.until(lambda d: d.find_element(By.ID, "tab-datasets")).click()
    driver.find_element(By.ID, "d-name").send_keys("flowers")
    Select(driver.find_element(By.ID, "d-app")).select_by_value("count")
    driver.find_element(By.ID, "d-path").send_keys("flowers")
    driver.find_element(By.ID, "dataset-button").click()
    wait.until(lambda d: d.find_elements(By.CLASS_NAME, "dataset-row"))
    # And upload the same images as an archive.
    archive = os.path.join(tmp, "flowers.tar.gz")
    subprocess.run(["tar", "-czf", archive, "-C", root, "flowers"], check=True)
    type_over("u-name", "uploaded")
    driver.find_element(By.ID, "u-file").send_keys(archive)
    driver.find_element(By.ID, "upload-button").click()
    wait.until(lambda d: len(d.find_elements(By.CLASS_NAME, "dataset-row")) == 2)
    assert os.path.isdir(os.path.join(root, "datasets", "uploaded", "flowers")), "the upload was not unpacked"

    # Submit a long job.
    driver.find_element(By.ID, "tab-submit").click()
    type_over("f-name", "from-the-page")
    Select(driver.find_element(By.ID, "f-app")).select_by_value("count")
    wait.until(lambda d: Select(d.find_element(By.ID, "f-dataset")).options)
    Select(driver.find_element(By.ID, "f-dataset")).select_by_index(0)
    for field, value in [("f-steps", "100000"), ("f-batch", "2"), ("f-every", "100000"), ("f-workers", "2")]:
        type_over(field, value)
    driver.find_element(By.ID, "submit-button").click()
    wait.until(lambda d: d.find_element(By.ID, "job-status").text == "running")

    # The curve grows (the page polls the metrics every 2 s) and the log fills.
    def points():
        return int(driver.find_element(By.ID, "curve-points").text.split()[0])
    wait.until(lambda d: points() >= 2)
    first = points()
    wait.until(lambda d: points() > first)
    wait.until(lambda d: "[worker:1]" in d.find_element(By.ID, "log").text)
    driver.save_screenshot(SCREENSHOT)

    # Stop it from the page.
    driver.find_element(By.ID, "stop-button").click()
    wait.until(lambda d: d.find_element(By.ID, "job-status").text == "stopped")
    assert "stopped on request" in driver.find_element(By.ID, "job-reason").text
    driver.find_element(By.ID, "tab-jobs").click()
    wait.until(lambda d: "stopped" in d.find_element(By.ID, "job-1").text)
    print("dflow jobs page: all checks passed; screenshot", SCREENSHOT)
except Exception:
    if driver:
        driver.save_screenshot(SCREENSHOT)
        print("page at the failure:", SCREENSHOT)
    print(open(os.path.join(tmp, "serve.log")).read())
    raise
finally:
    if driver:
        driver.quit()
    service.send_signal(signal.SIGTERM)
    try:
        service.wait(timeout=30)
    except subprocess.TimeoutExpired:
        service.kill()
shutil.rmtree(tmp, ignore_errors=True)  # kept, with the service's log, when a check failed
